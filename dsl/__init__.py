"""The language: load → validate → compile → graph → render → run → report → CLI.

This module is the public step-authoring API: everything a step library or a target needs.

PYTEST_DONT_REWRITE: the `stepgraph` command imports this package before it starts pytest, which
would then warn on every run that it cannot rewrite the asserts here. It has none to rewrite (its
few asserts narrow types), so it opts out and runs the same under `stepgraph run` and `pytest`.
"""

from __future__ import annotations

# One identity: this folder is the package stepgraph.dsl. Imported by its folder name (say
# `import dsl` from the checkout) it would be a second copy with its own registries and state.
if __name__ != "stepgraph.dsl":
    raise ImportError(f"dsl/ is the package stepgraph.dsl; import it by that name, not as {__name__!r}")

from .assert_rewriting import take_back_pytest_marks

take_back_pytest_marks()  # before the rest of the package is imported

from .bindings import BindingError, Bindings, Reads, Ref
from .clock import Clock, ManualClock, RealClock
from .context import StepContext
from .eventually import CheckFailed, EventuallyTimeout, ThroughoutBroken, eventually, throughout
from .files import NamesFile
from .finalizers import FinalizerError, FinalizerStack
from .matchers import MatchResult, align_multiset, delta, delta_at_least, delta_exactly, equal_except, multiset_equal, within_tolerance
from .phrases import register_placeholder_type
from .registry import (
    MUTATING_EFFECTS,
    REGISTRY,
    NoParams,
    Params,
    Registry,
    StepDecl,
    StepDeclarationError,
    given,
    step,
    then,
    when,
)
from .target import (
    DEFAULT_TICK_SECONDS,
    ClockSession,
    LocalTarget,
    Session,
    Target,
    TargetConfigError,
    TargetNotStarted,
    TargetSession,
)
from .timing import AGENT_TICK, PLANNER_TICK, POD_START
from .units import DEFAULT_PLANNER_TICK_SECONDS, Duration, Power, Watts

__all__ = [
    "AGENT_TICK",
    "DEFAULT_PLANNER_TICK_SECONDS",
    "DEFAULT_TICK_SECONDS",
    "MUTATING_EFFECTS",
    "PLANNER_TICK",
    "POD_START",
    "REGISTRY",
    "BindingError",
    "Bindings",
    "CheckFailed",
    "Clock",
    "ClockSession",
    "Duration",
    "EventuallyTimeout",
    "FinalizerError",
    "FinalizerStack",
    "LocalTarget",
    "ManualClock",
    "MatchResult",
    "NamesFile",
    "NoParams",
    "Params",
    "Power",
    "Reads",
    "RealClock",
    "Ref",
    "Registry",
    "Session",
    "StepContext",
    "StepDecl",
    "StepDeclarationError",
    "Target",
    "TargetConfigError",
    "TargetNotStarted",
    "TargetSession",
    "ThroughoutBroken",
    "Watts",
    "align_multiset",
    "delta",
    "delta_at_least",
    "delta_exactly",
    "equal_except",
    "eventually",
    "given",
    "multiset_equal",
    "register_placeholder_type",
    "step",
    "then",
    "throughout",
    "when",
    "within_tolerance",
]
