"""Power Agent steps: its pod, its Prometheus metrics (scraped from inside the pod), counter
baselines and deltas, and the applied-limit gauge.

Counters are cumulative for the life of the agent process, so every counter check is a delta
since a baseline taken in the same scenario — never an absolute value. That makes the zero-counter
scenario (B4/D3) independent of which scenarios ran before it in the same agent lifetime
(contract §1.2 T5; brief static check 7). The one absolute check (`counter_is`, the seed's form)
is declared `absolute`, so the compiler flags it after any scenario that increments the counters.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from stepgraph.dsl import CheckFailed, NoParams, Params, Ref, StepContext, given, then, when

from ._caps import require_caps_multiset
from ._cluster import POWER_ANNOTATION, cluster
from ._parsers import Sample, metric_by_label, metric_sum, watts_list
from .k8s import ObjectRef, apply_documents, delete_created, load_manifest

PREFIX = "dynamo_power_agent_"
BYSTANDER_MANIFEST = "40-conflict-bystander.yaml"
APPLIED_LIMIT = PREFIX + "applied_limit_watts"


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
    parse_metric_ref(text)
    return text


MetricRef = Annotated[str, AfterValidator(_metric_ref)]
WattsList = Annotated[str, AfterValidator(watts_list)]


@given("agent.running", "the Power Agent is running on the test node", key="agent_running", needs=("k8s", "agent"))
def running(ctx: StepContext, params: NoParams) -> None:
    """Exactly one Power Agent pod is Running on the test node (the seed's fixture precondition)."""
    ctx.eventually(cluster(ctx).find_agent, 180.0, description="one Power Agent pod running on the test node")


@given("agent.baseline", "a baseline of the Power Agent counters as {as}", key="counter_baseline", produces="metrics", needs=("agent",))
def baseline(ctx: StepContext, params: NoParams) -> list[Sample]:
    """Scrape the agent's metrics now, so later checks compare deltas, not absolute counts."""
    return cluster(ctx).metrics()


def _counter_since(ctx: StepContext, metric: str, since: Ref) -> tuple[float, float]:
    """A counter's sum in the baseline bound as `since`, and now (an absent family counts as 0)."""
    name, labels = parse_metric_ref(metric)
    return metric_sum(ctx.bindings[since.name], name, labels), metric_sum(cluster(ctx).metrics(), name, labels)


class DeltaParams(Params):
    metric: MetricRef
    at_least: int
    since: Ref


@then(
    "agent.counter_grew",
    "the counter {metric} grew by at least {at_least:int} since {since:ref}",
    needs=("agent",),
)
def counter_grew(ctx: StepContext, params: DeltaParams) -> None:
    """A cumulative counter moved by at least N since the baseline (use over ≥ 2 agent ticks)."""
    before, now = _counter_since(ctx, params.metric, params.since)
    if now - before < params.at_least:
        raise CheckFailed(
            f"counter {params.metric} since {params.since.name}",
            expected=f"grew by ≥ {params.at_least}",
            observed=f"grew by {now - before:g} ({before:g} → {now:g})",
        )


class UnchangedParams(Params):
    metric: MetricRef
    since: Ref


@then("agent.counter_unchanged", "the counter {metric} did not change since {since:ref}", needs=("agent",))
def counter_unchanged(ctx: StepContext, params: UnchangedParams) -> None:
    """A cumulative counter did not move since the baseline (an absent family counts as 0)."""
    before, now = _counter_since(ctx, params.metric, params.since)
    if now != before:
        raise CheckFailed(
            f"counter {params.metric} since {params.since.name}",
            expected=f"unchanged at {before:g}",
            observed=f"{now:g} (grew by {now - before:g})",
        )


class AppliedParams(Params):
    caps: WattsList


@then(
    "agent.applied_limits",
    "the applied-limit gauge reads {caps} in any GPU order",
    needs=("agent",),
)
def applied_limits(ctx: StepContext, params: AppliedParams) -> None:
    """B2: `applied_limit_watts{gpu}` over all GPUs equals the topology multiset."""
    observed = {int(k): int(v) for k, v in metric_by_label(cluster(ctx).metrics(), APPLIED_LIMIT, "gpu").items()}
    require_caps_multiset(APPLIED_LIMIT, params.caps, observed)


class BystanderParams(Params):
    watts: int


@when(
    "agent.conflict_bystander",
    "a bystander pod annotated {watts:int} W opens a CUDA context without claiming a GPU, as {as}",
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
    docs = load_manifest(c.manifest(BYSTANDER_MANIFEST), c.namespace)
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
    now = metric_sum(cluster(ctx).metrics(), name, labels)
    if now != params.value:
        raise CheckFailed(f"counter {params.metric}", expected=f"{params.value:g}", observed=f"{now:g}")
