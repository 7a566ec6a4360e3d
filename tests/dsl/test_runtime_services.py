"""Runtime services: eventually on a virtual clock, the finalizer stack, bindings, matchers, step execution."""

from __future__ import annotations

import pytest

from stepgraph.dsl import (
    BindingError,
    Bindings,
    CheckFailed,
    Duration,
    EventuallyTimeout,
    FinalizerError,
    FinalizerStack,
    ManualClock,
    Params,
    Ref,
    Registry,
    Session,
    StepContext,
    delta,
    delta_at_least,
    equal_except,
    eventually,
    multiset_equal,
    within_tolerance,
)
from stepgraph.dsl.execute import execute_call


def test_eventually_returns_as_soon_as_the_condition_holds() -> None:
    clock, calls = ManualClock(), []

    def ready() -> str:
        calls.append(clock.now())
        if clock.now() < 3:
            raise CheckFailed("not yet", expected="ready", observed=f"t={clock.now()}")
        return "done"

    assert eventually(ready, timeout=60, interval=1, clock=clock) == "done"
    assert calls == [0, 1, 2, 3] and clock.now() == 3  # no time wasted after success


def test_eventually_failure_shows_expected_and_last_observed() -> None:
    clock = ManualClock()
    seen = iter(range(100))

    def never() -> None:
        raise CheckFailed("counter too low", expected="≥ 5", observed=next(seen))

    with pytest.raises(EventuallyTimeout) as info:
        eventually(never, timeout=10, interval=2, clock=clock, description="counter grows")
    assert clock.now() == 10
    assert "counter grows: still failing after 10 s (6 attempts)" in str(info.value)
    assert "expected: ≥ 5" in str(info.value) and "observed: 5" in str(info.value)


def test_eventually_does_not_retry_bugs() -> None:
    clock = ManualClock()
    with pytest.raises(ZeroDivisionError):
        eventually(lambda: 1 / 0, timeout=10, clock=clock)
    assert clock.now() == 0


def test_finalizers_run_lifo_all_of_them_and_report_failures() -> None:
    stack, order = FinalizerStack(), []
    stack.push(lambda: order.append("first"), "first")
    stack.push(lambda: 1 / 0, "broken")
    stack.push(lambda: order.append("last"), "last")
    with pytest.raises(FinalizerError, match=r"1 finalizer\(s\) failed:\n  - broken: ZeroDivisionError"):
        stack.run()
    assert order == ["last", "first"] and len(stack) == 0


def test_finalizers_finish_before_a_ctrl_c_propagates() -> None:
    stack, order = FinalizerStack(), []

    def interrupt() -> None:
        raise KeyboardInterrupt

    stack.push(lambda: order.append("outer"), "outer")
    stack.push(interrupt, "interrupted")
    with pytest.raises(KeyboardInterrupt):
        stack.run()
    assert order == ["outer"]


def test_bindings_are_immutable_and_scoped() -> None:
    outer = Bindings()
    outer.bind("gpu", 3)
    inner = outer.child()
    inner.bind("caps", {0: 400})
    assert inner["gpu"] == 3 and "caps" not in outer
    with pytest.raises(BindingError, match='"gpu" is already bound'):
        inner.bind("gpu", 4)
    with pytest.raises(BindingError, match='"nope" is not bound'):
        inner.resolve([Ref("nope")])
    assert inner.resolve({"a": [Ref("gpu")], "b": Ref("caps")}) == {"a": [3], "b": {0: 400}}


def test_multiset_ignores_order_but_not_counts() -> None:
    assert multiset_equal([300, 250, 300], [300, 300, 250])
    result = multiset_equal([300, 250], [300, 300])
    assert not result and result.detail == "missing [250], unexpected [300]"
    with pytest.raises(CheckFailed, match="expected: \\[250, 300\\]"):
        result.require("caps")


def test_delta_and_except_matchers() -> None:
    assert delta({"a": 1}, {"a": 3, "b": 1}) == {"a": 2, "b": 1}
    assert delta_at_least({"a": 1}, {"a": 2}, "a", 1) and not delta_at_least({"a": 1}, {"a": 1}, "a", 1)
    assert equal_except({0: 400, 1: 400}, {0: 200, 1: 400}, exempt=[0])
    assert not equal_except({0: 400, 1: 400}, {0: 200, 1: 300}, exempt=[0])
    assert within_tolerance(300, 302, 5) and not within_tolerance(300, 310, 5)


class Target(Params):
    value: int


def test_execute_call_retries_checks_binds_results_and_registers_compensation() -> None:
    reg, undone = Registry(), []
    clock = ManualClock()

    @reg.when(
        "demo.make",
        "make {value:int} as {as}",
        produces="thing",
        effects={"creates-objects"},
        compensation=lambda ctx, p, result: undone.append(result),
    )
    def make(ctx: StepContext, p: Target) -> int:
        return p.value * 2

    @reg.then("demo.reaches", "the clock reaches {value:int}")
    def reaches(ctx: StepContext, p: Target) -> float:
        if ctx.clock.now() < p.value:
            raise CheckFailed("too early", expected=p.value, observed=ctx.clock.now())
        return ctx.clock.now()

    ctx = StepContext(session=Session(clock=clock, tick_seconds=5), bindings=Bindings(), finalizers=FinalizerStack())
    execute_call(reg.steps["demo.make"], Target(value=21), ctx, bind_as="x")
    assert ctx.bindings["x"] == 42
    assert execute_call(reg.steps["demo.reaches"], Target(value=7), ctx, within=Duration(2, "tick")) == 7
    with pytest.raises(EventuallyTimeout):
        execute_call(reg.steps["demo.reaches"], Target(value=100), ctx, within=Duration(1, "tick"))
    ctx.finalizers.run()
    assert undone == [42]


def test_a_within_in_agent_ticks_also_waits_for_the_ticks_reconcile_and_one_in_seconds_does_not():
    """An agent whose reconcile takes time (a real program) completes a tick's change that much
    after the tick; a deadline written in seconds is the author's own and gets nothing added."""
    clock = ManualClock()
    ctx = StepContext(session=Session(clock=clock, tick_seconds=15, reconcile_seconds=3),
                      bindings=Bindings(), finalizers=FinalizerStack())

    def done_at(t: float):
        def check() -> float:
            if clock.now() < t:
                raise CheckFailed("not yet", expected=t, observed=clock.now())
            return clock.now()
        return check

    assert ctx.eventually(done_at(17.0), Duration(1, "tick")) == 17.0  # past 15 s: 15 + 3
    start = clock.now()
    with pytest.raises(EventuallyTimeout) as err:
        ctx.eventually(done_at(start + 16.5), Duration(15, "s"))
    assert "after 15 s" in str(err.value)
