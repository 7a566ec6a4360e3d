"""`eventually` and `throughout`: a condition and a window on the target's clock.

`eventually` returns the condition's value as soon as it holds; `throughout` observes it over the
whole window and fails at the first observation where it does not hold (Gomega's Consistently).
Both poll on the target's clock (virtual on the twin, so no wall-clock time passes). A condition
signals "does not hold" by raising AssertionError (a failed check); any other exception is a bug
and propagates at once. A failure shows what was expected and the observations with their times.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .clock import Clock

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
        try:
            return condition()
        except AssertionError as failure:
            last = failure
            history = [*history[-(HISTORY - 1) :], (clock.now() - start, getattr(failure, "observed", None) or str(failure))]
        remaining = deadline - clock.now()
        if remaining <= 0:
            break
        clock.sleep(min(interval, remaining))
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
        try:
            value = condition()
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
        clock.sleep(min(interval, remaining))
