"""The finalizer stack: compensations pushed during a scenario → run LIFO at its end, always.

Every finalizer runs even when an earlier one fails or the run is interrupted (a finalizer cut
short by a first Ctrl-C runs once more, and the rest run after it); failures are collected and raised together
afterwards, never swallowed. Finalizers pushed with `last=True` (restoring GPU defaults) run after
all the others, whatever failed before them: a GPU restored while a workload still holds it
would be capped again. A second Ctrl-C during the cleanup stops it at once; what was not undone
is then listed in `left` and in the exception, so the operator knows exactly what remains. The
same when the cleanup runs out of its time bound (a stuck API must not hang the run forever).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from . import interrupts


@dataclass(frozen=True)
class Finalizer:
    func: Callable[[], Any]
    description: str


class FinalizerError(Exception):
    """One or more finalizers failed; `failures` holds (description, exception) pairs."""

    def __init__(self, failures: list[tuple[str, BaseException]]) -> None:
        self.failures = failures
        lines = [f"{len(failures)} finalizer(s) failed:"]
        lines += [f"  - {desc}: {type(exc).__name__}: {exc}" for desc, exc in failures]
        super().__init__("\n".join(lines))


class CleanupInterrupted(KeyboardInterrupt):
    """A second Ctrl-C stopped the cleanup; `left` names every compensation that did not finish."""

    def __init__(self, left: list[str]) -> None:
        self.left = left
        super().__init__("cleanup interrupted; not undone: " + ("; ".join(left) or "nothing"))


class CleanupTimedOut(BaseException):
    """The cleanup took longer than its bound (a stuck API); `left` names every compensation that
    did not finish. A BaseException, like KeyboardInterrupt, so that no `except Exception` on the
    way (the client's, a retry loop's) mistakes it for a failed request and carries on."""

    def __init__(self, budget_s: float, left: list[str] | None = None) -> None:
        self.budget_s = budget_s
        self.left = left or []
        super().__init__(f"cleanup took longer than {budget_s:g} s; not undone: " + ("; ".join(self.left) or "nothing"))


@contextlib.contextmanager
def _time_bound(budget_s: float | None) -> Iterator[None]:
    """Raise CleanupTimedOut in this (the main) thread once `budget_s` wall-clock seconds passed,
    wherever it is blocked — a socket read that never gets an answer included. A timer signal is
    the one way to cut a blocking call short in Python; elsewhere than the main thread, no bound."""
    if budget_s is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def time_up(signum: int, frame: Any) -> None:
        raise CleanupTimedOut(budget_s)

    previous = signal.signal(signal.SIGALRM, time_up)
    signal.setitimer(signal.ITIMER_REAL, budget_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class FinalizerStack:
    """LIFO compensations for one scope (a scenario, or the whole run)."""

    def __init__(self) -> None:
        self._stack: list[Finalizer] = []
        self._last: list[Finalizer] = []
        self.ran: list[str] = []
        self.failed: list[str] = []
        self.left: list[str] = []

    def push(self, func: Callable[[], Any], description: str, *, last: bool = False) -> None:
        (self._last if last else self._stack).append(Finalizer(func, description))

    def __len__(self) -> int:
        return len(self._stack) + len(self._last)

    def _pop(self) -> Finalizer | None:
        if self._stack:
            return self._stack.pop()
        return self._last.pop() if self._last else None

    def pending(self) -> list[str]:
        """Descriptions of what has not run yet, in the order it would run."""
        return [f.description for f in reversed(self._stack)] + [f.description for f in reversed(self._last)]

    def run(self, budget_s: float | None = None) -> None:
        """Run everything pushed, newest first, `last` ones at the end; then raise what failed
        (a Ctrl-C only after all ran, unless a second one stops the cleanup itself). With
        `budget_s`, the whole cleanup has that many wall-clock seconds: once they are up it stops
        and raises CleanupTimedOut naming what was not undone."""
        if not self._stack and not self._last:  # most scenarios: no timer to arm, nothing to run
            return
        current: list[Finalizer] = []
        try:
            with _time_bound(budget_s):
                self._run_all(current)
        except CleanupTimedOut as exc:
            self.left = [f.description for f in current] + self.pending()
            self._stack.clear()
            self._last.clear()
            if self.left:  # not when the bound ran out just as the last one finished
                raise CleanupTimedOut(exc.budget_s, self.left) from None

    def _run_all(self, current: list[Finalizer]) -> None:
        failures: list[tuple[str, BaseException]] = []
        interrupt: BaseException | None = None
        while (fin := self._pop()) is not None:
            current[:] = [fin]
            try:
                cut_short = self._run_one(fin)
                self.ran.append(fin.description)
                interrupt = interrupt or cut_short
            except (KeyboardInterrupt, SystemExit) as exc:
                interrupt = interrupt or exc
                failures.append((fin.description, exc))
                self.failed.append(fin.description)
            except Exception as exc:
                failures.append((fin.description, exc))
                self.failed.append(fin.description)
        current.clear()
        if interrupt is not None:
            raise interrupt
        if failures:
            raise FinalizerError(failures)

    def _run_one(self, fin: Finalizer) -> BaseException | None:
        """Run one finalizer; return the Ctrl-C that cut it short, if one did. Cut short by a
        first Ctrl-C, it runs once more from the start — compensations are idempotent — so the
        interrupt stops the run, not its cleanup."""
        try:
            fin.func()
            return None
        except (KeyboardInterrupt, SystemExit) as exc:
            self._stop_on_second_interrupt(fin, exc)
            first = exc
        try:
            fin.func()
        except (KeyboardInterrupt, SystemExit) as exc:
            self._stop_on_second_interrupt(fin, exc)
            raise
        return first

    def _stop_on_second_interrupt(self, fin: Finalizer, exc: BaseException) -> None:
        if interrupts.count() >= 2:  # Ctrl-C again while cleaning up: stop, say what is left
            self.left = [fin.description, *self.pending()]
            self._stack.clear()
            self._last.clear()
            raise CleanupInterrupted(self.left) from exc
