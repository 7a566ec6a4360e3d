"""Steps about pods: the language from stepgraph.dsl, the cluster from stepgraph.steps."""

from __future__ import annotations

from stepgraph.dsl import CheckFailed, Params, StepContext, then
from stepgraph.steps import NotFound, cluster


class Selector(Params):
    selector: str


class PodName(Params):
    name: str


@then("acme.hostname_is_pod_name", "the pod labelled {selector} answers hostname with its own name", needs={"k8s"})
def hostname_is_pod_name(ctx: StepContext, p: Selector) -> None:
    """Exec `hostname` in the one running pod with these labels; it must print the pod's name."""
    c = cluster(ctx)
    pod = c.the_pod(p.selector, f"labelled {p.selector}")
    printed = c.exec(pod, ["hostname"]).check("hostname").stdout.strip()
    if printed != pod.metadata.name:
        raise CheckFailed("the pod's hostname is not its name", expected=pod.metadata.name, observed=printed)


@then("acme.no_pod_named", "there is no pod named {name}", needs={"k8s"})
def no_pod_named(ctx: StepContext, p: PodName) -> None:
    """No pod of this name in the test namespace (the API's 404 arrives as NotFound)."""
    try:
        cluster(ctx).pod(p.name)
    except NotFound:
        return
    raise CheckFailed(f"pod {p.name!r} exists", expected="no such pod", observed=p.name)
