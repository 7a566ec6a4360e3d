"""Cap writes per GPU: how many power-limit writes each GPU received since a baseline (C4: steady
state is one write per busy GPU per agent tick).

No live source counts a driver's limit writes — NVML reads the current limit, not how often it
was set, and the agent exports no write counter — so the count comes from the twin's GPU model
(`/twin/v1/gpus`, every successful write through NVML or DCGM) and the steps need the capability
`cap-write-count`, which only the twin offers: a live run skips them with that reason.
"""

from __future__ import annotations

from stepgraph.dsl import CheckFailed, NoParams, Params, Ref, StepContext, given, then

from ._cluster import cluster
from .faults import twin_call

GPUS_PATH = "/twin/v1/gpus"


def write_counts(ctx: StepContext) -> dict[int, int]:
    """{NVML index: limit writes so far} from the twin's GPU model."""
    c = cluster(ctx)
    return {g["index"]: g["writes"] for g in twin_call(c, "GET", GPUS_PATH, query={"node": c.node})["nodes"][c.node]}


@given(
    "writes.baseline",
    "a baseline of the cap writes to every GPU as {as}",
    key="writes_baseline",
    produces="write counts",
    needs=("cap-write-count",),
)
def baseline(ctx: StepContext, params: NoParams) -> dict[int, int]:
    """Record how many power-limit writes each GPU has received so far."""
    return write_counts(ctx)


class WritesParams(Params):
    count: int
    since: Ref


@then(
    "writes.each_gpu",
    "every GPU received exactly {count:int} cap writes since {since:ref}",
    key="writes_each_gpu",
    needs=("cap-write-count", "actuator-nvml"),
)
def each_gpu(ctx: StepContext, params: WritesParams) -> None:
    """Each GPU's number of power-limit writes since the baseline is exactly N (the total, N × GPUs,
    is shown too): more means something rewrites caps within a tick, fewer that a GPU was skipped.
    NVML actuator only: through DCGM with enforce on, one cap is two driver writes (Set, Enforce)."""
    before: dict[int, int] = ctx.bindings[params.since.name]
    now = write_counts(ctx)
    grown = {i: now[i] - before.get(i, 0) for i in sorted(now)}
    if any(n != params.count for n in grown.values()):
        raise CheckFailed(
            f"cap writes per GPU since {params.since.name}",
            expected=f"{params.count} on each of {len(grown)} GPUs ({params.count * len(grown)} in all)",
            observed=f"{grown} ({sum(grown.values())} in all)",
        )
