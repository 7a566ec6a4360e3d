"""`eventually` and `throughout`: a condition and a window on the target's clock.

`eventually` returns the condition's value as soon as it holds; `throughout` observes it over the
whole window and fails at the first observation where it does not hold (Gomega's Consistently).
Both poll on the target's clock (virtual on the twin, so no wall-clock time passes). A condition
signals "does not hold" by raising AssertionError (a failed check); any other exception is a bug
and propagates at once. A failure shows what was expected and the observations with their times.

On a clock that can say until when nothing will happen on it (a `QuietClock`: the twin's virtual
clock, whose cluster changes only when a timer fires or a request changes it), a poll that would
fall before that moment would see what the last one saw, as long as that one did not read the
time itself or let time pass: such polls are not made, and the next one is made at the first
poll time at or after the moment — the same moment the window would have seen the change at,
so verdicts, failures and the time a window ends are the same, with fewer observations.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from .clock import Clock, QuietClock

T = TypeVar("T")

DEFAULT_INTERVAL = 1.0
HISTORY = 3  # observations a failure shows


class CheckFailed(AssertionError):
    """A check did not hold; carries what was expected and what was observed."""

    def __init__(self, message: str, *, expected: Any = None, observed: Any = None, history: Any = (), aligned: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.expected = expected
        self.observed = observed
        #: For an expectation without keys (a multiset of caps) against keyed observations (per GPU):
        #: the expectation laid out on the observed keys, so the failure can show them side by side.
        self.aligned = aligned
        #: The last observations before the verdict: (seconds since the window opened, observed).
        self.history: tuple[tuple[float, Any], ...] = tuple(history)

    def __str__(self) -> str:
        parts = [self.message]
        if self.expected is not None:
            parts.append(f"  expected: {self.expected}")
        if self.observed is not None:
            parts.append(f"  observed: {self.observed}")
        return "\n".join(parts)


def _what_failed(failure: AssertionError, label: str) -> str:
    """The failed check's own words after a window's verdict: its message (what it looks at) beside
    its expected and observed, or the whole failure when it carries neither."""
    if getattr(failure, "expected", None) is None and getattr(failure, "observed", None) is None:
        return f"; {label}: {failure}"
    return f": {failure.message}" if isinstance(failure, CheckFailed) else ""


class StepRefused(Exception):
    """The system under test does not have what a step names (a pod that does not exist): the
    scenario's mistake or the system's answer, not a bug in the step, so it is reported as one
    block at the step, like a failed check, not as a traceback. Not retried under `within`."""


class EventuallyTimeout(CheckFailed):
    """The condition still did not hold at the deadline."""


def eventually(
    condition: Callable[[], T],
    *,
    timeout: float,
    clock: Clock,
    interval: float = DEFAULT_INTERVAL,
    description: str = "",
) -> T:
    """Call `condition` until it returns without AssertionError, at most until `timeout` seconds pass."""
    if timeout < 0 or interval <= 0:
        raise ValueError("eventually: timeout must be ≥ 0 and interval > 0")
    start = clock.now()
    deadline = start + timeout
    attempts = 0
    history: list[tuple[float, Any]] = []
    while True:
        attempts += 1
        observation = _Observation(clock)
        try:
            return condition()
        except AssertionError as failure:
            last = failure
            observation.end()
            history = [*history[-(HISTORY - 1) :], (clock.now() - start, getattr(failure, "observed", None) or str(failure))]
        remaining = deadline - clock.now()
        if remaining <= 0:
            break
        clock.sleep(observation.wait(interval, remaining))
    what = f"{description}: " if description else ""
    expected = getattr(last, "expected", None)
    observed = getattr(last, "observed", None)
    message = f"{what}still failing after {timeout:g} s ({attempts} attempts)" + _what_failed(last, "last failure")
    aligned = getattr(last, "aligned", None)
    raise EventuallyTimeout(message, expected=expected, observed=observed, history=history, aligned=aligned) from last


class ThroughoutBroken(CheckFailed):
    """The condition stopped holding inside the window."""


def throughout(
    condition: Callable[[], T],
    *,
    duration: float,
    clock: Clock,
    interval: float = DEFAULT_INTERVAL,
    description: str = "",
) -> T:
    """Call `condition` at the window's start, every `interval` seconds and at its end; every call
    must return without AssertionError. Returns the last observation's value."""
    if duration < 0 or interval <= 0:
        raise ValueError("throughout: duration must be ≥ 0 and interval > 0")
    start = clock.now()
    deadline = start + duration
    observations = 0
    while True:
        observations += 1
        observation = _Observation(clock)
        try:
            value = condition()
            observation.end()
        except AssertionError as failure:
            what = f"{description}: " if description else ""
            held = clock.now() - start
            message = f"{what}stopped holding after {held:g} s of {duration:g} s (observation {observations})"
            message += _what_failed(failure, "failure")
            expected = getattr(failure, "expected", None)
            observed = getattr(failure, "observed", None)
            aligned = getattr(failure, "aligned", None)
            raise ThroughoutBroken(message, expected=expected, observed=observed, history=[(held, observed)], aligned=aligned) from failure
        remaining = deadline - clock.now()
        if remaining <= 0:
            return value
        clock.sleep(observation.wait(interval, remaining))


class _Observation:
    """One call of a window's condition, and how long to wait for the next one: `interval`, or
    on a `QuietClock` as many whole intervals as end before its next timer, when the call neither
    read the time nor let any pass (a retry's back-off sleeps on the clock) — the cluster it read
    is then the same until that timer fires."""

    def __init__(self, clock: Clock) -> None:
        self.quiet = clock if isinstance(clock, QuietClock) else None
        self.at, self.readings = (self.quiet.now(), self.quiet.readings()) if self.quiet else (0.0, 0)
        self.unchanged = False

    def end(self) -> None:
        """The condition has returned or failed: note whether it read the time or let some pass."""
        if self.quiet:
            self.unchanged = self.quiet.readings() == self.readings and self.quiet.now() == self.at

    def wait(self, interval: float, remaining: float) -> float:
        if self.quiet and self.unchanged:
            now, until = self.quiet.now(), self.quiet.quiet_until()
            if until == math.inf:
                return remaining  # nothing will change by itself: the deadline's poll is the next that can differ
            if until > now + interval:
                return min(math.ceil((until - now) / interval) * interval, remaining)
        return min(interval, remaining)
