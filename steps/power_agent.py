"""Power Agent steps: its pod, its Prometheus metrics (scraped from inside the pod), counter
baselines and deltas, and the applied-limit gauge.

Counters are cumulative for the life of the agent process, so every counter check is a delta
since a baseline taken in the same scenario — never an absolute value. That makes the zero-counter
scenario (B4/D3) independent of which scenarios ran before it in the same agent lifetime
(contract §1.2 T5; brief static check 7). The one absolute check (`counter_is`, the seed's form)
is declared `absolute`, so the compiler flags it after any scenario that increments the counters.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator

from stepgraph.dsl import AGENT_TICK, CheckFailed, NoParams, Params, Reads, Ref, StepContext, Watts, given, then, when

from ._caps import require_caps_multiset
from ._clients import translated
from ._cluster import AGENT_SELECTOR, POWER_ANNOTATION, Cluster, cluster
from ._parsers import Sample, has_family, metric_by_label, metric_sum, parse_kv_lines, watts_list
from ._probe_pod import run_in_probe_pod
from .k8s import ObjectRef, apply_documents, delete_created, manifest_documents

if TYPE_CHECKING:
    from kubernetes import client

PREFIX = "dynamo_power_agent_"
BYSTANDER_MANIFEST = "40-conflict-bystander.yaml"
APPLIED_LIMIT = PREFIX + "applied_limit_watts"


#: The Power Agent's metric families (without the prefix) per generation, with their labels and
#: each label's values where the agent fixes them (None: any value). From the contract's reading
#: of the agent source: PA-9790 (and the opt-in variant) and PA-late, which dropped
#: dcgm_enforce_failures_total with Enforce.
_COUNTERS_9790: dict[str, dict[str, frozenset[str] | None]] = {
    "multi_pod_gpu_total": {"disposition": frozenset({"agree", "conflict"})},
    "safe_default_applied_total": {},
    "apply_failures_total": {},
    "cap_clamped_total": {"direction": frozenset({"min", "max"})},
    "k8s_list_failures_total": {},
    "dcgm_enforce_failures_total": {},
}
GAUGES: dict[str, dict[str, frozenset[str] | None]] = {"applied_limit_watts": {"gpu": None}}
COUNTERS_BY_GENERATION = {
    "pa-9790": _COUNTERS_9790,
    "pa-optin": _COUNTERS_9790,
    "pa-late": {k: v for k, v in _COUNTERS_9790.items() if k != "dcgm_enforce_failures_total"},
}
COUNTERS = {name: labels for counters in COUNTERS_BY_GENERATION.values() for name, labels in counters.items()}


def check_counter_ref(name: str, labels: dict[str, str], text: str) -> None:
    """A counter family and labels the agent declares (some generation of it), or a ValueError
    with the spelling meant: a typo would otherwise read an absent family as 0, before and after."""
    short = name.removeprefix(PREFIX)
    if short in GAUGES:
        raise ValueError(f"{text!r} is a gauge, not a counter — counters: {', '.join(sorted(COUNTERS))}")
    if short not in COUNTERS and f"{short}_total" in COUNTERS:
        short = f"{short}_total"
    if short not in COUNTERS:
        close = difflib.get_close_matches(short, list(COUNTERS), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else f"the agent's counters: {', '.join(sorted(COUNTERS))}"
        raise ValueError(f"{text!r}: the Power Agent has no counter {short!r} — {hint}")
    declared = COUNTERS[short]
    for key, value in labels.items():
        if key not in declared:
            allowed = ", ".join(sorted(declared)) or "none"
            raise ValueError(f"{text!r}: {short} has no label {key!r} — its labels: {allowed}")
        values = declared[key]
        if values is not None and value not in values:
            raise ValueError(f"{text!r}: {short}{{{key}}} is never {value!r} — it is one of {', '.join(sorted(values))}")


def generations_with(short: str) -> list[str]:
    return sorted(g for g, counters in COUNTERS_BY_GENERATION.items() if short in counters)


def parse_metric_ref(text: str) -> tuple[str, dict[str, str]]:
    """`multi_pod_gpu_total{disposition=conflict}` → (full family name, labels)."""
    name, _, rest = text.strip().partition("{")
    labels: dict[str, str] = {}
    if rest:
        if not rest.endswith("}"):
            raise ValueError(f"{text!r}: labels must close with }} — e.g. multi_pod_gpu_total{{disposition=conflict}}")
        for pair in filter(None, (p.strip() for p in rest[:-1].split(","))):
            key, eq, value = pair.partition("=")
            if not eq or not key.strip():
                raise ValueError(f"{text!r}: a label is written key=value, got {pair!r}")
            labels[key.strip()] = value.strip().strip('"')
    name = name.strip()
    if not name.replace("_", "").isalnum():
        raise ValueError(f"{text!r} is not a metric name — e.g. safe_default_applied_total")
    return (name if name.startswith(PREFIX) else PREFIX + name), labels


def _metric_ref(text: str) -> str:
    check_counter_ref(*parse_metric_ref(text), text)
    return text


MetricRef = Annotated[str, AfterValidator(_metric_ref)]
WattsList = Annotated[str, AfterValidator(watts_list)]


@given("agent.running", "the Power Agent is running on the test node", key="agent_running", needs=("k8s", "agent"))
def running(ctx: StepContext, params: NoParams) -> None:
    """Exactly one Power Agent pod is Running and Ready on the test node (the seed's fixture
    precondition; what `kubectl rollout status` waits for)."""
    ctx.eventually(lambda: _ready(cluster(ctx).find_agent()), 180.0, description="one Power Agent pod running on the test node")


@given("agent.baseline", "a baseline of the Power Agent counters as {as}", key="counter_baseline", produces="metrics", needs=("agent",))
def baseline(ctx: StepContext, params: NoParams) -> list[Sample]:
    """Scrape the agent's metrics now, so later checks compare deltas, not absolute counts."""
    return cluster(ctx).metrics()


def _counter_since(ctx: StepContext, metric: str, since: Ref, *, may_be_absent: bool = False) -> tuple[float, float] | None:
    """A counter's sum in the baseline bound as `since`, and now. A family the agent does not
    expose fails the check (it would read 0 before and after) — or, when the step allows it,
    gives None."""
    name, labels = parse_metric_ref(metric)
    before, now = ctx.bindings[since.name], cluster(ctx).metrics()
    present = [has_family(scrape, name) for scrape in (before, now)]
    if not all(present):
        if may_be_absent and not any(present):
            return None
        short = name.removeprefix(PREFIX)
        where = "in the baseline" if present[1] else "now" if present[0] else "in the baseline or now"
        scraped = sorted(f.removeprefix(PREFIX) for f in getattr(now, "families", ()) if f.endswith("_total"))
        raise CheckFailed(
            f"counter family {short} is absent from the agent's metrics {where} (declared by generations"
            f" {', '.join(generations_with(short))}); write `… or absent` if this agent may not have it",
            expected=f"{short} present",
            observed=f"scraped counters: {', '.join(scraped) or 'none'}",
        )
    return metric_sum(before, name, labels), metric_sum(now, name, labels)


class DeltaParams(Params):
    metric: MetricRef
    at_least: int
    since: Annotated[Ref, Reads("metrics")]


@then(
    "agent.counter_grew", "the counter {metric} grew by at least {at_least:int} since {since:ref}", needs=("agent",), min_within=AGENT_TICK
)
def counter_grew(ctx: StepContext, params: DeltaParams) -> None:
    """A cumulative counter moved by at least N since the baseline (use over ≥ 2 agent ticks)."""
    counted = _counter_since(ctx, params.metric, params.since)
    assert counted is not None
    before, now = counted
    if now - before < params.at_least:
        raise CheckFailed(
            f"counter {params.metric} since {params.since.name}",
            expected=f"grew by ≥ {params.at_least}",
            observed=f"grew by {now - before:g} ({before:g} → {now:g})",
        )


class UnchangedParams(Params):
    metric: MetricRef
    since: Annotated[Ref, Reads("metrics")]


@then("agent.counter_unchanged", "the counter {metric} did not change since {since:ref}", needs=("agent",))
def counter_unchanged(ctx: StepContext, params: UnchangedParams) -> None:
    """A cumulative counter did not move since the baseline (its family must be there)."""
    _require_unchanged(ctx, params, may_be_absent=False)


@then(
    "agent.counter_unchanged_or_absent",
    "the counter {metric} did not change since {since:ref}, or is absent",
    needs=("agent",),
)
def counter_unchanged_or_absent(ctx: StepContext, params: UnchangedParams) -> None:
    """Like `did not change since`, for a family some agent generations do not have (PA-late has
    no dcgm_enforce_failures_total): absent in the baseline and now also passes."""
    _require_unchanged(ctx, params, may_be_absent=True)


def _require_unchanged(ctx: StepContext, params: UnchangedParams, *, may_be_absent: bool) -> None:
    counted = _counter_since(ctx, params.metric, params.since, may_be_absent=may_be_absent)
    if counted is None:
        return
    before, now = counted
    if now != before:
        raise CheckFailed(
            f"counter {params.metric} since {params.since.name}",
            expected=f"unchanged at {before:g}",
            observed=f"{now:g} (grew by {now - before:g})",
        )


class AppliedParams(Params):
    caps: WattsList


@then("agent.applied_limits", "the applied-limit gauge reads {caps} in any GPU order", needs=("agent",), min_within=AGENT_TICK)
def applied_limits(ctx: StepContext, params: AppliedParams) -> None:
    """B2: `applied_limit_watts{gpu}` over all GPUs equals the topology multiset."""
    observed = {int(k): int(v) for k, v in metric_by_label(cluster(ctx).metrics(), APPLIED_LIMIT, "gpu").items()}
    require_caps_multiset(APPLIED_LIMIT, params.caps, observed)


class BystanderParams(Params):
    watts: Watts


@when(
    "agent.conflict_bystander",
    "a bystander pod annotated {watts:watts} opens a CUDA context without claiming a GPU, as {as}",
    key="conflict_bystander",
    produces="objects",
    needs=("k8s", "k8s-write"),
    effects=("creates-objects", "increments-agent-counters"),
    compensation=delete_created,
)
def conflict_bystander(ctx: StepContext, params: BystanderParams) -> list[ObjectRef]:
    """B5: a pod that sees every GPU (`NVIDIA_VISIBLE_DEVICES=all`, no claim) and opens its context
    on the first one, annotated with a cap that conflicts with the worker already there.

    Declared as incrementing the agent's counters: the conflict and safe-default counters grow on
    every tick it lives, which static check 7 weighs against later absolute counter checks.
    """
    c = cluster(ctx)
    docs = manifest_documents(c, BYSTANDER_MANIFEST)
    for doc in docs:
        doc["metadata"].setdefault("annotations", {})[POWER_ANNOTATION] = str(params.watts)
    return apply_documents(ctx, docs, into=ctx.intend([]))


class CounterIsParams(Params):
    metric: MetricRef
    value: int


@then(
    "agent.counter_is",
    "the counter {metric} is {value:int}",
    key="counter_total",
    needs=("agent",),
    absolute=("agent-counters",),
)
def counter_is(ctx: StepContext, params: CounterIsParams) -> None:
    """The seed's absolute form (T5): a counter's total over the agent's lifetime. It depends on
    what ran before in the same agent lifetime, so static check 7 rejects it after a scenario that
    increments the counters; prefer `did not change since` a baseline."""
    name, labels = parse_metric_ref(params.metric)
    scrape = cluster(ctx).metrics()
    if not has_family(scrape, name):
        short = name.removeprefix(PREFIX)
        raise CheckFailed(f"counter family {short} is absent from the agent's metrics", expected=f"{params.value:g}", observed="absent")
    now = metric_sum(scrape, name, labels)
    if now != params.value:
        raise CheckFailed(f"counter {params.metric}", expected=f"{params.value:g}", observed=f"{now:g}")


# -- the agent's life: stop, start again, restart, crash --------------------------------------------

PAUSE_LABEL = "stepgraph.io/agent-paused"  # a nodeSelector key no node carries: the DaemonSet places no pod
LIFECYCLE_DEADLINE_S = 180.0


def agent_daemonset(c: Cluster) -> client.V1DaemonSet:
    """The DaemonSet whose pods are the Power Agent (matched on the pod template's labels)."""
    key, _, value = AGENT_SELECTOR.partition("=")
    with translated(f"list daemonsets in {c.system_namespace}"):
        found = [ds for ds in c.apps.list_namespaced_daemon_set(c.system_namespace).items
                 if ((ds.spec.template.metadata.labels or {}).get(key) == value)]
    if len(found) != 1:
        raise CheckFailed("the Power Agent's DaemonSet", expected="exactly one", observed=[d.metadata.name for d in found] or "none")
    return found[0]


def _pause(c: Cluster, paused: bool) -> None:
    ds = agent_daemonset(c)
    patch = {"spec": {"template": {"spec": {"nodeSelector": {PAUSE_LABEL: "true" if paused else None}}}}}
    with translated(f"patch daemonset {ds.metadata.name}"):
        c.apps.patch_namespaced_daemon_set(ds.metadata.name, ds.metadata.namespace, patch)


def _agent_pods(c: Cluster) -> list[client.V1Pod]:
    return [p for p in c.system_pods(AGENT_SELECTOR) if not p.metadata.deletion_timestamp]


def _no_agent(c: Cluster) -> None:
    left = [p.metadata.name for p in c.system_pods(AGENT_SELECTOR)]
    if left:
        raise CheckFailed("no Power Agent pod on the test node", expected="none", observed=left)


def _new_agent_running(c: Cluster, not_uid: str | None) -> client.V1Pod:
    running = [p for p in _agent_pods(c) if p.status and p.status.phase == "Running" and p.metadata.uid != not_uid]
    if len(running) != 1 or len(_agent_pods(c)) != 1:
        raise CheckFailed("one new Power Agent pod running", expected=f"1 running pod other than {not_uid}",
                          observed={p.metadata.name: p.status.phase if p.status else None for p in c.system_pods(AGENT_SELECTOR)}
                          or "none")
    return _ready(running[0])


def _ready(pod: client.V1Pod) -> client.V1Pod:
    """The pod, if its Ready condition is True (a program still starting is Running, not Ready)."""
    conditions = (pod.status.conditions if pod.status else None) or []
    if not any(cond.type == "Ready" and cond.status == "True" for cond in conditions):
        raise CheckFailed(f"Power Agent pod {pod.metadata.name} Ready", expected="Ready=True",
                          observed={cond.type: cond.status for cond in conditions} or "no conditions")
    return pod


def _await_agent(ctx: StepContext, not_uid: str | None = None) -> None:
    c = cluster(ctx)
    ctx.eventually(lambda: _new_agent_running(c, not_uid), LIFECYCLE_DEADLINE_S, description="the Power Agent running")
    c.find_agent()


def _unpause(ctx: StepContext, params: Params, result: object) -> None:
    """Compensation of `stopped`: the DaemonSet places its pod again and the agent runs (idempotent)."""
    c = cluster(ctx)
    if PAUSE_LABEL in (agent_daemonset(c).spec.template.spec.node_selector or {}):
        _pause(c, False)
    _await_agent(ctx)


@when(
    "agent.stop",
    "the Power Agent is stopped",
    key="agent_stop",
    needs=("k8s", "k8s-write", "agent"),
    effects=("modifies-objects", "deletes-objects"),
    compensation=_unpause,
)
def stop(ctx: StepContext, params: NoParams) -> None:
    """Uninstall the agent from the node as an operator would: its DaemonSet is given a node selector
    no node matches, so the pod is deleted gracefully (SIGTERM: the agent restores the GPUs it
    manages, C2) and not replaced. The compensation (or `started again`) takes the selector off."""
    c = cluster(ctx)
    _pause(c, True)
    ctx.eventually(lambda: _no_agent(c), LIFECYCLE_DEADLINE_S, description="the Power Agent pod gone")


@when(
    "agent.start",
    "the Power Agent is started again",
    key="agent_start",
    needs=("k8s", "k8s-write", "agent"),
    effects=("modifies-objects",),
    compensation=_unpause,
)
def start(ctx: StepContext, params: NoParams) -> None:
    """Reinstall a stopped agent: its DaemonSet places a new pod, which recovers orphans and reconciles."""
    _unpause(ctx, params, None)


def _restart_kind(text: str) -> str:
    if text not in ("crashes", "restarts"):
        raise ValueError(f"{text!r}: write `crashes` (killed, no shutdown) or `restarts` (SIGTERM, then a new pod)")
    return text


class RestartParams(Params):
    how: Annotated[str, AfterValidator(_restart_kind)]


def _agent_back(ctx: StepContext, params: Params, old_uid: str) -> None:
    _await_agent(ctx, None)


@when(
    "agent.restart",
    "the Power Agent {how:word} and its DaemonSet starts a new one",
    key="agent_restart",
    needs=("k8s", "k8s-write", "agent"),
    effects=("deletes-objects",),
    compensation=_agent_back,
)
def restart(ctx: StepContext, params: RestartParams) -> str:
    """Delete the agent pod — `crashes`: killed at once (no grace period, so no SIGTERM restore: the
    new agent's orphan recovery is what cleans up, C3); `restarts`: gracefully — and wait until the
    DaemonSet's replacement pod runs."""
    c = cluster(ctx)
    old = c.find_agent()
    grace = {"grace_period_seconds": 0} if params.how == "crashes" else {}
    with translated(f"delete pod {old.metadata.name}"):
        c.core.delete_namespaced_pod(old.metadata.name, old.metadata.namespace, **grace)
    _await_agent(ctx, str(old.metadata.uid))
    return str(old.metadata.uid)


@then(
    "agent.stopped_all_default",
    "with no Power Agent running, every GPU reads back at its default NVML power limit",
    key="agentless_at_default",
    needs=("nvml", "k8s-write"),
)
def stopped_all_default(ctx: StepContext, params: NoParams) -> None:
    """C2: read NVML from a one-off probe pod in the agent's image (there is no agent pod to exec
    into) and compare every GPU's limit with its default."""
    c = cluster(ctx)
    _no_agent(c)
    image = agent_daemonset(c).spec.template.spec.containers[0].image
    rows = parse_kv_lines(run_in_probe_pod(ctx, c, "nvml_at_default", image))
    off = {int(i): v for i, v in rows.items() if len(set(v.split(","))) != 1}
    if not rows or off:
        raise CheckFailed("every GPU at its default NVML limit (W: limit,default)", expected="limit == default on every GPU",
                          observed={int(i): v for i, v in sorted(rows.items(), key=lambda kv: int(kv[0]))} or "no reading")
