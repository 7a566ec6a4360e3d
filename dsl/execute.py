"""One compiled step call + a context → the step's effect: retried under `within` (or observed over
`throughout`), compensated, bound."""

from __future__ import annotations

from typing import Any

from .context import StepContext
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
