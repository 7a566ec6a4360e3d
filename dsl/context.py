"""The step context: what a step implementation receives besides its parameters."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from . import matchers as _matchers
from .bindings import Bindings
from .clock import Clock
from .eventually import DEFAULT_INTERVAL, eventually, throughout
from .finalizers import FinalizerStack
from .target import TargetSession
from .units import DEFAULT_PLANNER_TICK_SECONDS, Duration

T = TypeVar("T")


@dataclass
class StepContext:
    """Target session, bindings, finalizers, waiting and matchers for one step call."""

    session: TargetSession
    bindings: Bindings
    finalizers: FinalizerStack
    step_id: str = ""
    location: str = ""
    cache: dict[str, Any] = field(default_factory=dict)  # per target session; e.g. API clients
    poll_interval: float = DEFAULT_INTERVAL
    run_finalizers: FinalizerStack = field(default_factory=FinalizerStack)  # run once, at the end of the run
    intent: list[Any] = field(default_factory=list)  # what this step announced before acting (see `intend`)
    cleanup_notes: list[str] = field(default_factory=list)  # one line each for the run's cleanup summary
    matchers = _matchers

    @property
    def clock(self) -> Clock:
        return self.session.clock

    @property
    def tick_seconds(self) -> float:
        return self.session.tick_seconds

    @property
    def kubeconfig(self) -> str | None:
        return self.session.kubeconfig

    @property
    def capabilities(self) -> set[str]:
        return self.session.capabilities

    def seconds(self, duration: Duration | float) -> float:
        """A Duration (maybe in agent or planner ticks) or plain seconds → seconds on this target."""
        if isinstance(duration, Duration):
            planner_tick = float(getattr(self.session, "planner_tick_seconds", DEFAULT_PLANNER_TICK_SECONDS))
            return duration.to_seconds(self.tick_seconds, planner_tick)
        return float(duration)

    def resolve(self, value: Any) -> Any:
        """Replace binding reads ($name) inside `value` by their values."""
        return self.bindings.resolve(value)

    def defer(self, func: Callable[[], Any], description: str, *, last: bool = False) -> None:
        """Register a compensation to run at the end of the scenario (LIFO, always; `last` ones
        after all the others)."""
        self.finalizers.push(func, description, last=last)

    def defer_to_run_end(self, func: Callable[[], Any], description: str) -> None:
        """Register something to run once at the end of the whole run, before the target stops
        (e.g. verifying that nothing the run created is left)."""
        self.run_finalizers.push(func, description)

    def intend(self, value: T) -> T:
        """Announce, before acting, what the step's compensation will have to undo.

        The compensation is registered before the step runs; if the step does not return (it
        failed or was interrupted half-way), the compensation receives this value instead of the
        result. Pass a mutable value (a list the step appends to before each effect) so that it
        always covers everything the step may have done. A step that never calls `intend` and
        does not return has nothing to undo, and its compensation does not run."""
        self.intent[:] = [value]
        return value

    def eventually(
        self, condition: Callable[[], T], within: Duration | float, *, interval: float | None = None, description: str = ""
    ) -> T:
        """Retry `condition` on the target's clock until it stops raising AssertionError."""
        timeout = self.seconds(within)
        if isinstance(within, Duration) and within.unit == "tick":
            # the change a tick makes is complete only when its reconcile has done its work
            timeout += float(getattr(self.session, "reconcile_seconds", 0.0))
        return eventually(
            condition,
            timeout=timeout,
            clock=self.clock,
            interval=interval or self.poll_interval,
            description=description or self.step_id,
        )

    def throughout(
        self, condition: Callable[[], T], duration: Duration | float, *, interval: float | None = None, description: str = ""
    ) -> T:
        """Observe `condition` on the target's clock for `duration`; it must hold every time."""
        return throughout(
            condition,
            duration=self.seconds(duration),
            clock=self.clock,
            interval=interval or self.poll_interval,
            description=description or self.step_id,
        )
