"""steps/common.py: each check passes when its condition holds and fails, showing expected vs.
observed, when it does not; waits move only the target's clock."""

from __future__ import annotations

import pytest

from stepgraph.dsl import REGISTRY, Bindings, CheckFailed, Duration, EventuallyTimeout, FinalizerStack, ManualClock, Session, StepContext
from stepgraph.dsl.execute import execute_call


@pytest.fixture
def ctx() -> StepContext:
    REGISTRY.load_entry_points()
    return StepContext(session=Session(clock=ManualClock(), tick_seconds=15), bindings=Bindings(), finalizers=FinalizerStack())


def run(ctx: StepContext, step_id: str, within: Duration | None = None, bind_as: str | None = None, **params: object) -> object:
    decl = REGISTRY.steps[step_id]
    return execute_call(decl, decl.params.model_validate(params), ctx, bind_as=bind_as, within=within)


def test_bind_snapshot_and_equals(ctx: StepContext) -> None:
    run(ctx, "common.bind_list", items=["a", "b"], bind_as="l")
    run(ctx, "common.snapshot", source="$l", bind_as="s")
    run(ctx, "common.equals", left="$s", right="$l")
    ctx.bindings["l"].append("c")  # the snapshot is a copy: later changes do not reach it
    with pytest.raises(CheckFailed) as info:
        run(ctx, "common.equals", left="$s", right="$l")
    assert (info.value.expected, info.value.observed) == (["a", "b", "c"], ["a", "b"])


def test_same_elements_ignores_order_not_counts(ctx: StepContext) -> None:
    run(ctx, "common.bind_list", items=["0", "1", "1"], bind_as="a")
    run(ctx, "common.bind_list", items=["1", "0", "1"], bind_as="b")
    run(ctx, "common.bind_list", items=["1", "0", "0"], bind_as="c")
    run(ctx, "common.same_elements", left="$a", right="$b")
    with pytest.raises(CheckFailed, match=r"missing \['1'\], unexpected \['0'\]"):
        run(ctx, "common.same_elements", left="$c", right="$a")


def test_value_is(ctx: StepContext) -> None:
    run(ctx, "common.bind", value="ready", bind_as="state")
    run(ctx, "common.value_is", name="$state", value="ready")
    with pytest.raises(CheckFailed) as info:
        run(ctx, "common.value_is", name="$state", value="done")
    assert (info.value.expected, info.value.observed) == ("done", "ready")


def test_waiting_moves_the_target_clock_in_ticks(ctx: StepContext) -> None:
    run(ctx, "common.note_time", bind_as="t0")
    run(ctx, "common.wait", duration="2 agent ticks")
    assert ctx.clock.now() == 30
    run(ctx, "common.elapsed", duration="30 s", since="$t0")
    with pytest.raises(CheckFailed, match="not enough time passed"):
        run(ctx, "common.elapsed", duration="31 s", since="$t0")


def test_elapsed_within_waits_just_long_enough_or_times_out(ctx: StepContext) -> None:
    run(ctx, "common.note_time", bind_as="t0")
    run(ctx, "common.elapsed", within=Duration(1, "tick"), duration="10 s", since="$t0")
    assert ctx.clock.now() == 10  # returned as soon as it held
    with pytest.raises(EventuallyTimeout) as info:
        run(ctx, "common.elapsed", within=Duration(5, "s"), duration="60 s", since="$t0")
    assert "expected: ≥ 60 s" in str(info.value) and "observed: 15 s" in str(info.value)
