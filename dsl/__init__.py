"""The language: load → validate → compile → graph → render → run → report → CLI.

This module is the public step-authoring API: everything a step library or a target needs.

PYTEST_DONT_REWRITE: the `stepgraph` command imports this package before it starts pytest, which
would then warn on every run that it cannot rewrite the asserts here. It has none to rewrite (its
few asserts narrow types), so it opts out and runs the same under `stepgraph run` and `pytest`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# One identity: this folder is the package stepgraph.dsl. Imported by its folder name (say
# `import dsl` from the checkout) it would be a second copy with its own registries and state.
if __name__ != "stepgraph.dsl":
    raise ImportError(f"dsl/ is the package stepgraph.dsl; import it by that name, not as {__name__!r}")

from .assert_rewriting import take_back_pytest_marks

take_back_pytest_marks()  # before the rest of the package is imported

# The one name that is also a module's: importing the module `eventually` binds the package's
# attribute to it, so the function is bound here, after that import (both are light).
from .eventually import eventually  # noqa: F401  (exported: see __all__)

# The names below are loaded on first use (PEP 562): a process that only needs a part of the
# language — the console script's interrupt handling, a pytest run with stepgraph installed and no
# scenario in it — imports that part alone, not the whole API with pydantic behind it.
_MODULES: dict[str, tuple[str, ...]] = {
    "bindings": ("BindingError", "Bindings", "Reads", "Ref"),
    "clock": ("Clock", "ManualClock", "RealClock"),
    "context": ("StepContext",),
    "eventually": ("CheckFailed", "EventuallyTimeout", "ThroughoutBroken", "throughout"),
    "files": ("NamesFile",),
    "finalizers": ("FinalizerError", "FinalizerStack"),
    "matchers": (
        "MatchResult", "align_multiset", "delta", "delta_at_least", "delta_exactly", "equal_except",
        "multiset_equal", "within_tolerance",
    ),
    "phrases": ("register_placeholder_type",),
    "registry": (
        "MUTATING_EFFECTS", "REGISTRY", "NoParams", "Params", "Registry", "StepDecl", "StepDeclarationError",
        "given", "step", "then", "when",
    ),
    "target": (
        "DEFAULT_TICK_SECONDS", "ClockSession", "LocalTarget", "Session", "Target", "TargetConfigError",
        "TargetNotStarted", "TargetSession",
    ),
    "timing": ("AGENT_TICK", "PLANNER_TICK", "POD_START"),
    "units": ("DEFAULT_PLANNER_TICK_SECONDS", "Duration", "Power", "Watts"),
}
_MODULE_OF = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted([*_MODULE_OF, "eventually"])

if TYPE_CHECKING:
    from .bindings import BindingError as BindingError
    from .bindings import Bindings as Bindings
    from .bindings import Reads as Reads
    from .bindings import Ref as Ref
    from .clock import Clock as Clock
    from .clock import ManualClock as ManualClock
    from .clock import RealClock as RealClock
    from .context import StepContext as StepContext
    from .eventually import CheckFailed as CheckFailed
    from .eventually import EventuallyTimeout as EventuallyTimeout
    from .eventually import ThroughoutBroken as ThroughoutBroken
    from .eventually import throughout as throughout
    from .files import NamesFile as NamesFile
    from .finalizers import FinalizerError as FinalizerError
    from .finalizers import FinalizerStack as FinalizerStack
    from .matchers import MatchResult as MatchResult
    from .matchers import align_multiset as align_multiset
    from .matchers import delta as delta
    from .matchers import delta_at_least as delta_at_least
    from .matchers import delta_exactly as delta_exactly
    from .matchers import equal_except as equal_except
    from .matchers import multiset_equal as multiset_equal
    from .matchers import within_tolerance as within_tolerance
    from .phrases import register_placeholder_type as register_placeholder_type
    from .registry import MUTATING_EFFECTS as MUTATING_EFFECTS
    from .registry import REGISTRY as REGISTRY
    from .registry import NoParams as NoParams
    from .registry import Params as Params
    from .registry import Registry as Registry
    from .registry import StepDecl as StepDecl
    from .registry import StepDeclarationError as StepDeclarationError
    from .registry import given as given
    from .registry import step as step
    from .registry import then as then
    from .registry import when as when
    from .target import DEFAULT_TICK_SECONDS as DEFAULT_TICK_SECONDS
    from .target import ClockSession as ClockSession
    from .target import LocalTarget as LocalTarget
    from .target import Session as Session
    from .target import Target as Target
    from .target import TargetConfigError as TargetConfigError
    from .target import TargetNotStarted as TargetNotStarted
    from .target import TargetSession as TargetSession
    from .timing import AGENT_TICK as AGENT_TICK
    from .timing import PLANNER_TICK as PLANNER_TICK
    from .timing import POD_START as POD_START
    from .units import DEFAULT_PLANNER_TICK_SECONDS as DEFAULT_PLANNER_TICK_SECONDS
    from .units import Duration as Duration
    from .units import Power as Power
    from .units import Watts as Watts


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
