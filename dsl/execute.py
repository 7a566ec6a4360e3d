"""One compiled step call + a context → the step's effect: retried under `within` (or observed over
`throughout`), compensated, bound. Checks judged together are observed as one condition."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .context import StepContext
from .eventually import CheckFailed
from .ir import JointCheck, StepCall
from .registry import Params, StepDecl
from .units import Duration


def execute_call(
    decl: StepDecl,
    params: Params,
    ctx: StepContext,
    *,
    bind_as: str | None = None,
    within: Duration | None = None,
    throughout: Duration | None = None,
) -> Any:
    """Run `decl` with `params`, its compensation registered *before* it acts; bind its result.

    The compensation gets the step's result, or — when the step failed or was interrupted half-way —
    what the step announced with `ctx.intend` before acting; with neither it has nothing to undo.
    """

    __tracebackhide__ = True
    returned: list[Any] = []
    if decl.compensation is not None:
        compensation = decl.compensation

        def compensate() -> Any:
            done = returned or ctx.intent
            return compensation(ctx, params, done[0]) if done else None

        ctx.defer(compensate, f"compensate {decl.id} ({ctx.location or 'step'})")

    def attempt() -> Any:
        __tracebackhide__ = True
        return decl.func(ctx, params)

    if throughout is not None:
        result = ctx.throughout(attempt, throughout, description=f"{decl.id} throughout {throughout}")
    elif within is not None:
        result = ctx.eventually(attempt, within, description=f"{decl.id} within {within}")
    else:
        result = attempt()
    returned.append(result)
    if bind_as is not None:
        ctx.bindings.bind(bind_as, result)
    return result


class JointFailed(CheckFailed):
    """At one observation, not every check judged together held."""


def execute_joint(joint: JointCheck, contexts: Sequence[StepContext]) -> list[Any]:
    """Observe every check of `joint` at each observation of its window (each with its own
    context, in order): under `within` until all of them hold at the same observation, under
    `throughout` at every observation. Bind their results from the observation that decided.

    Every check is observed each time, not only up to the first that fails, so a failure can say
    which held and when: checks that each held at some moment but never together read as such."""
    __tracebackhide__ = True
    clock = contexts[0].clock
    start = clock.now()
    held_at: dict[int, float] = {}  # check index → when it first held, since the window opened

    def observe() -> list[Any]:
        __tracebackhide__ = True
        now = clock.now() - start
        results, failures = [], []
        for index, (call, ctx) in enumerate(zip(joint.checks, contexts, strict=True)):
            try:
                results.append(call.decl.func(ctx, call.params))
            except AssertionError as failure:
                failures.append((index, failure))
            else:
                held_at.setdefault(index, now)
        if failures:
            raise _joint_failure(joint, dict(failures), held_at, now)
        return results

    description = f"{len(joint.checks)} checks together {joint.window}"
    if joint.window.mode == "throughout":
        results = contexts[0].throughout(observe, joint.window.duration, description=description)
    else:
        results = contexts[0].eventually(observe, joint.window.duration, description=description)
    for call, ctx, result in zip(joint.checks, contexts, results, strict=True):
        if call.bind_as is not None:
            ctx.bindings.bind(call.bind_as, result)
    return results


def _joint_failure(joint: JointCheck, failures: dict[int, AssertionError], held_at: dict[int, float], now: float) -> JointFailed:
    def label(call: StepCall) -> str:
        return f"{call.step_id} ({call.location})"

    lines = [f"{len(failures)} of the {len(joint.checks)} checks judged together did not hold at +{now:g} s:"]
    for index, call in enumerate(joint.checks):
        failure = failures.get(index)
        if failure is None:
            lines.append(f"    ✓ {label(call)} held")
            continue
        why = failure.message if isinstance(failure, CheckFailed) else str(failure)
        earlier = f" — it held at +{held_at[index]:g} s, when the others did not all hold" if index in held_at else ""
        lines.append(f"    ✗ {label(call)}: {why}{earlier}")
    failed = [(joint.checks[i], f) for i, f in failures.items()]
    if len(failed) == 1:
        [(_, only)] = failed
        expected, observed, aligned = (getattr(only, name, None) for name in ("expected", "observed", "aligned"))
    else:
        expected = {label(c): getattr(f, "expected", None) for c, f in failed}
        observed = {label(c): getattr(f, "observed", None) for c, f in failed}
        aligned = None
    return JointFailed("\n".join(lines), expected=expected, observed=observed, aligned=aligned)
