"""Targets: a named place to run scenarios → a session (kubeconfig, clock, ticks, capabilities, facts).

Targets are found through the `stepgraph.targets` entry-point group; each entry point is a
factory (usually the class) called without arguments. The built-in `local` target has no cluster
and a virtual clock; the demo scenarios and target-independent steps run on it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .clock import Clock, ManualClock
from .entry_points import in_group
from .eventually import StepRefused
from .units import DEFAULT_PLANNER_TICK_SECONDS

DEFAULT_TICK_SECONDS = 15.0
TARGET_GROUP = "stepgraph.targets"


class TargetConfigError(Exception):
    """The target cannot run as configured; pytest and the CLI exit with code 2 and this one line."""


@runtime_checkable
class TargetSession(Protocol):
    """What a running target gives the steps."""

    kubeconfig: str | None
    clock: Clock
    tick_seconds: float
    capabilities: set[str]
    facts: dict[str, Any]


@runtime_checkable
class Target(Protocol):
    """A factory of sessions. `capabilities` is known before start, so scenarios are gated statically.

    Optionally a target has `configure(options)`, called with the `--target-option` values before
    gating, for capabilities that depend on options (e.g. the twin's world profile), and `options`,
    the keys it takes (key → what values), which every `--target-option` must name; and
    `preload()`, which imports what `start` will need: `stepgraph run` with several worlds calls
    it once, then forks a process per world, so that each starts with it loaded; and
    `clock_session(options)`, a `ClockSession` for the scenarios that need none of the target's
    capabilities: a run starts the target itself only for a scenario that will use it, and ends
    the clock session with `stop` too."""

    name: str
    capabilities: frozenset[str]

    def start(self, options: Mapping[str, str]) -> TargetSession: ...

    def stop(self, session: TargetSession) -> None: ...


@dataclass
class Session:
    """A plain TargetSession that targets may return."""

    clock: Clock
    kubeconfig: str | None = None
    tick_seconds: float = DEFAULT_TICK_SECONDS
    capabilities: set[str] = field(default_factory=set)
    facts: dict[str, Any] = field(default_factory=dict)
    poll_interval: float = 1.0  # seconds between attempts of a check under `within`
    planner_tick_seconds: float = DEFAULT_PLANNER_TICK_SECONDS  # what `1 planner tick` lasts
    # How long a tick's reconcile works after it begins, so its effects are complete this much
    # after the tick: 0 for an agent whose work takes no time on the clock (a virtual one); a
    # `within N agent ticks` deadline adds it.
    reconcile_seconds: float = 0.0


class TargetNotStarted(StepRefused):
    """A step reached for the cluster in a scenario that runs on the target's clock session."""


class ClockSession(Session):
    """The session of the scenarios that need none of the target's capabilities: the target's
    clock, ticks and facts, and no cluster, since the target was not started for them.

    A step that reaches for the cluster all the same (a declaration that names no need, yet uses
    the cluster) is refused here: with no kubeconfig, the client would fall back to whatever
    default kubeconfig or in-cluster account the machine has, and the step would act on a cluster
    the run never chose."""

    @property  # type: ignore[override]
    def kubeconfig(self) -> str | None:
        raise TargetNotStarted(
            "this step reaches the cluster, but the scenario needs none of the target's capabilities, so the "
            "target was not started for it — declare what the step uses in its needs=(...), e.g. needs=(\"k8s\",)"
        )

    @kubeconfig.setter
    def kubeconfig(self, value: str | None) -> None:
        if value is not None:
            raise ValueError("a ClockSession has no cluster: it takes no kubeconfig")


def check_options(target: Target, options: Mapping[str, str]) -> None:
    """Every `--target-option` key is one the target declares (`options`: key → what it takes);
    a target that declares none takes none. A silently ignored option would make a run pass
    that was not the run asked for."""
    declared: Mapping[str, str] = getattr(target, "options", None) or {}
    for key, value in options.items():
        if key in declared:
            continue
        close = difflib.get_close_matches(key, list(declared), n=1)
        guess = f"did you mean {close[0]}? " if close else ""
        if declared:
            allowed = "; ".join(f"{k} ({what})" for k, what in sorted(declared.items()))
            raise TargetConfigError(
                f"--target-option {key}={value}: target {target.name!r} has no option {key!r} — {guess}its options: {allowed}"
            )
        raise TargetConfigError(f"--target-option {key}={value}: target {target.name!r} takes no options — remove it")


class LocalTarget:
    """No cluster, virtual time: for scenarios that need nothing."""

    name = "local"
    capabilities: frozenset[str] = frozenset()
    options: Mapping[str, str] = {"tick_seconds": "seconds an agent tick lasts, e.g. 15"}

    def start(self, options: Mapping[str, str]) -> Session:
        try:
            tick = float(options.get("tick_seconds", DEFAULT_TICK_SECONDS))
        except ValueError:
            raise TargetConfigError("target local: tick_seconds must be a number of seconds — e.g. tick_seconds=15") from None
        return Session(clock=ManualClock(), tick_seconds=tick, facts={"target": "local", "tick_seconds": tick})

    def stop(self, session: TargetSession) -> None:
        return None


def target_factories() -> dict[str, Callable[[], Any]]:
    """Every known target by name: the entry points, plus `local` unless one overrides it."""
    found: dict[str, Callable[[], Any]] = {"local": LocalTarget}  # a target class, or an entry point's load
    for ep in in_group(TARGET_GROUP):
        found[ep.name] = ep.load
    return found


def default_target_name() -> str:
    return "twin" if "twin" in target_factories() else "local"


def load_target(name: str) -> Target:
    """A target by entry-point name, or by `package.module:factory` for ad-hoc targets."""
    if ":" in name:
        factory = _import_factory(name)
    else:
        factories = target_factories()
        if name not in factories:
            raise TargetConfigError(f"unknown target {name!r} — choose one of: {', '.join(sorted(factories))}")
        factory = factories[name]
        if factory is not LocalTarget:
            factory = factory()  # entry point → the factory it names
    try:
        target = factory()
    except Exception as exc:  # an ad-hoc factory that is not one (os:system, a function taking arguments)
        problem = f"{type(exc).__name__}: {exc}"
        raise TargetConfigError(f"target {name!r} cannot be made ({problem}) — write package.module:TargetClass") from None
    if not isinstance(target, Target):
        raise TargetConfigError(f"target {name!r} does not provide name, capabilities, start() and stop()")
    return target


def _import_factory(spec: str) -> Callable[[], Any]:
    import importlib
    import inspect

    module_name, _, attr = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError, TypeError) as exc:
        raise TargetConfigError(f"target {spec!r} cannot be loaded ({exc}) — write package.module:TargetClass") from None
    if not inspect.isclass(factory):  # never call an arbitrary function (os:system) to make a target
        raise TargetConfigError(f"target {spec!r} is not a class — write package.module:TargetClass")
    return factory
