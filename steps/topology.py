"""Topology steps: bring up the multi-DGD topology the target offers — Path A (three DGDs whose
operator renders worker and planner pods) or Path B (five stub workers) — and take it down again,
verifying that every GPU is back at its default limit.

The path comes from the target's capabilities (`path-a` / `path-b`); manifests come from the
session's variant folder (examples/manifests/<variant>/). What already runs (a live node prepared
by hand) is adopted, not owned: it is neither deleted nor reset afterwards. What another run
left behind (its objects carry that run's label) is not a prepared node: it is removed first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepgraph.dsl import CheckFailed, NoParams, Params, StepContext, given, when

from ._clients import translated
from ._cluster import DGD_LABEL, PLANNER_SELECTOR, WORKER_SELECTOR, PodSummary, cluster
from .k8s import OWNS_GPU_CAPS, ObjectRef, apply_documents, delete_objects, manifest_documents, sweep_leftovers
from .nvml import restore_defaults

if TYPE_CHECKING:
    from kubernetes import client

PATH_B_MANIFESTS = ("50-stub-workers.yaml",)
PATH_A_MANIFESTS = ("30-vllm-dgd-a.yaml", "31-vllm-dgd-b.yaml", "32-vllm-dgd-c.yaml")
WORKERS = 5
PLANNERS = 3
TEST_POD_SELECTOR = "purpose=power-aware-multi-dgd-test"
STARTUP_DEADLINE_S = 300.0  # the seed's README waits 5 min for the stubs to be Ready


def path_of(ctx: StepContext) -> str:
    """`a` or `b`, from the target's capabilities."""
    if "path-a" in ctx.capabilities:
        return "a"
    if "path-b" in ctx.capabilities:
        return "b"
    raise CheckFailed("topology path", expected="target capability path-a or path-b", observed=sorted(ctx.capabilities))


def _running(ctx: StepContext, selector: str, count: int, what: str, on_node: bool = True) -> None:
    c = cluster(ctx)

    def ready() -> None:
        # List without the node filter so unscheduled (Pending) pods show in the failure too.
        pods = c.pod_summaries(selector, on_node=False)
        running = [p for p in pods if p.phase == "Running" and (not on_node or p.node == c.node)]
        if len(running) != count or len(pods) != count:
            raise CheckFailed(
                f"{what} running",
                expected=f"{count} running",
                observed={p.name: p.phase for p in pods} or "none",
            )

    ctx.eventually(ready, STARTUP_DEADLINE_S, interval=5.0, description=f"{count} {what} running")


def _take_down(ctx: StepContext, params: NoParams, refs: list[ObjectRef]) -> None:
    """Delete what the bring-up created (adopted objects stay) and wait until its pods are gone.

    The GPU restore is not part of this: it is registered on its own to run after every other
    compensation of the scenario, whether this one succeeded or not."""
    if not any(r.created for r in refs):
        return  # adopted topology (prepared outside the run): leave it and its caps alone
    delete_objects(ctx, refs, only_created=True)
    c = cluster(ctx)

    def test_pods_gone() -> None:
        left = [p.name for p in c.pod_summaries(TEST_POD_SELECTOR, on_node=False)]
        if left:
            raise CheckFailed("the topology's pods are gone", expected="none", observed=left)

    # Restore only once no workload holds a GPU: a running pod's next agent tick would re-cap it.
    ctx.eventually(test_pods_gone, 120.0, interval=5.0, description="topology pods deleted")


def _restore_gpus(ctx: StepContext, refs: list[ObjectRef], swept: list[str]) -> None:
    """Every GPU back at its default and read back — unless the whole topology was adopted."""
    if any(r.created for r in refs) or swept:
        restore_defaults(cluster(ctx))


@given(
    "topology.running",
    "the multi-DGD topology is running on the test node",
    key="topology",
    needs=("k8s", "k8s-write", "agent"),
    effects=("creates-objects",),
    compensation=_take_down,
)
def running(ctx: StepContext, params: NoParams) -> list[ObjectRef]:
    """Path B: five stub workers (1+1+2+2+2 GPUs). Path A: DGDs A, B, C with one planner each.

    What other runs left (objects labelled with their run) is removed first, or adopted with the
    `leftovers=adopt` option; the GPU restore is registered before anything is created and runs
    after every other compensation of the scenario."""
    c = cluster(ctx)
    names = PATH_A_MANIFESTS if path_of(ctx) == "a" else PATH_B_MANIFESTS
    docs = [doc for name in names for doc in manifest_documents(c, name)]
    refs: list[ObjectRef] = ctx.intend([])
    swept: list[str] = []
    ctx.defer(lambda: _restore_gpus(ctx, refs, swept), "restore every GPU to its default limit", last=True)
    kinds = {(d["apiVersion"], d["kind"], d["metadata"].get("namespace")) for d in docs} | {("v1", "Pod", c.namespace)}
    swept += sweep_leftovers(ctx, kinds)
    apply_documents(ctx, docs, into=refs)
    if any(r.created for r in refs) or swept:
        ctx.cache[OWNS_GPU_CAPS] = True  # the run-end check then also reads every GPU back
    _running(ctx, WORKER_SELECTOR, WORKERS, "worker pods")
    if path_of(ctx) == "a":
        _running(ctx, PLANNER_SELECTOR, PLANNERS, "planner pods", on_node=False)
    return refs


# -- one DGD's workers go away (and come back at the end) ---------------------------------------------

DGD_API = ("nvidia.com", "v1alpha1", "dynamographdeployments")


class DgdParams(Params):
    dgd: str


def _workers_of(ctx: StepContext, dgd: str) -> list[client.V1Pod]:
    """The DGD's worker pods as the client's models (to copy them whole); `_worker_summaries` to check them."""
    return [p for p in cluster(ctx).pods(WORKER_SELECTOR, on_node=False) if (p.metadata.labels or {}).get(DGD_LABEL) == dgd]


def _worker_summaries(ctx: StepContext, dgd: str) -> list[PodSummary]:
    return [p for p in cluster(ctx).pod_summaries(WORKER_SELECTOR, on_node=False) if p.labels.get(DGD_LABEL) == dgd]


def _workers_gone(ctx: StepContext, dgd: str) -> None:
    left = [p.name for p in _worker_summaries(ctx, dgd)]
    if left:
        raise CheckFailed(f"the worker pods of {dgd} gone", expected="none", observed=left)


def _bring_back(ctx: StepContext, params: DgdParams, saved: dict[str, Any]) -> None:
    """Compensation: the DGD's workers run again as before (Path A: the DGD object re-created, its
    operator renders workers and planner; Path B: the stub pods re-created under their names)."""
    c = cluster(ctx)
    if saved["dgd"] is not None:
        with translated(f"re-create DGD {params.dgd}"):
            c.custom.create_namespaced_custom_object(*DGD_API[:2], c.namespace, DGD_API[2], saved["dgd"])
    for body in saved["pods"]:
        with translated(f"re-create pod {body['metadata']['name']}"):
            c.core.create_namespaced_pod(c.namespace, body)

    def running() -> None:
        pods = _worker_summaries(ctx, params.dgd)
        if len(pods) != saved["count"] or any(p.phase != "Running" for p in pods):
            raise CheckFailed(f"the worker pods of {params.dgd} running again", expected=f"{saved['count']} running",
                              observed={p.name: p.phase for p in pods} or "none")

    ctx.eventually(running, STARTUP_DEADLINE_S, interval=5.0, description=f"the workers of {params.dgd} back")


def _bare_copy(pod: client.V1Pod, api: client.ApiClient) -> dict[str, Any]:
    body = api.sanitize_for_serialization(pod)
    meta = {k: body["metadata"][k] for k in ("name", "namespace", "labels", "annotations") if k in body["metadata"]}
    spec = {k: v for k, v in body["spec"].items() if k != "nodeName"}  # placed afresh, as a new pod would be
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


@when(
    "topology.delete_dgd_workers",
    "the worker pods of {dgd} are deleted",
    key="delete_dgd_workers",
    needs=("k8s", "k8s-write"),
    effects=("deletes-objects",),
    compensation=_bring_back,
)
def delete_dgd_workers(ctx: StepContext, params: DgdParams) -> dict[str, Any]:
    """Take one DGD's workers off the node and wait until they are gone: on Path A by deleting the
    DGD (its operator would re-create deleted pods of a live DGD), on Path B by deleting its stub
    pods. Their GPUs go idle; what the agent does with idle GPUs is what C3 checks."""
    c = cluster(ctx)
    pods = _workers_of(ctx, params.dgd)
    if not pods:
        raise CheckFailed(f"worker pods of {params.dgd}", expected="at least one", observed="none")
    saved: dict[str, Any] = {"dgd": None, "pods": [], "count": len(pods)}
    if path_of(ctx) == "a":
        with translated(f"read DGD {params.dgd}"):
            dgd = c.custom.get_namespaced_custom_object(*DGD_API[:2], c.namespace, DGD_API[2], params.dgd)
        saved["dgd"] = {k: v for k, v in dgd.items() if k != "status"}
        saved["dgd"]["metadata"] = {k: dgd["metadata"][k] for k in ("name", "namespace", "labels", "annotations")
                                    if k in dgd["metadata"]}
        with translated(f"delete DGD {params.dgd}"):
            c.custom.delete_namespaced_custom_object(*DGD_API[:2], c.namespace, DGD_API[2], params.dgd)
    else:
        saved["pods"] = [_bare_copy(p, c.api) for p in pods]
        for pod in pods:
            with translated(f"delete pod {pod.metadata.name}"):
                c.core.delete_namespaced_pod(pod.metadata.name, c.namespace)
    ctx.eventually(lambda: _workers_gone(ctx, params.dgd), STARTUP_DEADLINE_S, interval=5.0,
                   description=f"the workers of {params.dgd} gone")
    return saved
