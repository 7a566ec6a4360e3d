"""Target-independent steps: bind values, let time pass (seconds or agent ticks), snapshot and
compare bound values. They need no capability, so they run on every target.
"""

from __future__ import annotations

from typing import Any

from stepgraph.dsl import CheckFailed, Duration, NoParams, Params, Ref, StepContext, given, multiset_equal, then, when


class Value(Params):
    value: str


class Items(Params):
    items: list[str]


class Source(Params):
    source: Ref


class Pair(Params):
    left: Ref
    right: Ref


class Expected(Params):
    name: Ref
    value: str


class Wait(Params):
    duration: Duration


class Since(Params):
    duration: Duration
    since: Ref


@given("common.bind", "the value {value} is bound as {as}", key="bind", produces="text")
def bind_value(ctx: StepContext, p: Value) -> str:
    """Bind a literal text."""
    return p.value


@given("common.bind_list", "the list {items:list} is bound as {as}", key="bind_list", produces="list of texts")
def bind_list(ctx: StepContext, p: Items) -> list[str]:
    """Bind a list of texts (Gherkin: comma-separated in quotes)."""
    return list(p.items)


@given("common.note_time", "the time is noted as {as}", key="note_time", produces="clock reading (s)")
def note_time(ctx: StepContext, p: NoParams) -> float:
    """Bind the target clock's current reading."""
    return ctx.clock.now()


@given("common.snapshot", "a snapshot of {source:ref} is taken as {as}", key="snapshot", produces="copy of a bound value")
def snapshot(ctx: StepContext, p: Source) -> Any:
    """Bind a deep copy of a bound value, to compare with later."""
    import copy

    return copy.deepcopy(ctx.resolve(p.source))


@when("common.wait", "we wait {duration:duration}", key="wait")
def wait(ctx: StepContext, p: Wait) -> None:
    """Let time pass on the target clock (virtual on the twin). Prefer `within` when waiting for a condition."""
    ctx.clock.sleep(ctx.seconds(p.duration))


@then("common.equals", "{left:ref} equals {right:ref}", key="equals")
def equals(ctx: StepContext, p: Pair) -> None:
    """Two bound values are equal."""
    left, right = ctx.resolve(p.left), ctx.resolve(p.right)
    if left != right:
        raise CheckFailed(f"{p.left} differs from {p.right}", expected=right, observed=left)


@then("common.same_elements", "{left:ref} has the same elements as {right:ref}", key="same_elements")
def same_elements(ctx: StepContext, p: Pair) -> None:
    """Two bound collections hold the same elements with the same counts, in any order."""
    multiset_equal(ctx.resolve(p.right), ctx.resolve(p.left)).require(f"{p.left} vs {p.right}")


@then("common.value_is", "{name:ref} is {value}", key="value_is")
def value_is(ctx: StepContext, p: Expected) -> None:
    """A bound value, as text, is the given text."""
    observed = ctx.resolve(p.name)
    if str(observed) != p.value:
        raise CheckFailed(f"{p.name} has another value", expected=p.value, observed=observed)


@then("common.elapsed", "at least {duration:duration} passed since {since:ref}", key="elapsed")
def elapsed(ctx: StepContext, p: Since) -> float:
    """The clock moved at least this far since a noted time; wrap it in `within` to wait for it."""
    passed = ctx.clock.now() - ctx.resolve(p.since)
    if passed < ctx.seconds(p.duration):
        raise CheckFailed("not enough time passed", expected=f"≥ {ctx.seconds(p.duration):g} s", observed=f"{passed:g} s")
    return passed
