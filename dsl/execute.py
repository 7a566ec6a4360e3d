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
    """Run `decl` with `params`; register its compensation once it returned; bind its result."""

    __tracebackhide__ = True

    def attempt() -> Any:
        __tracebackhide__ = True
        return decl.func(ctx, params)

    if throughout is not None:
        result = ctx.throughout(attempt, throughout, description=f"{decl.id} throughout {throughout}")
    elif within is not None:
        result = ctx.eventually(attempt, within, description=f"{decl.id} within {within}")
    else:
        result = attempt()
    if decl.compensation is not None:
        compensation = decl.compensation
        ctx.defer(lambda: compensation(ctx, params, result), f"compensate {decl.id} ({ctx.location or 'step'})")
    if bind_as is not None:
        ctx.bindings.bind(bind_as, result)
    return result
