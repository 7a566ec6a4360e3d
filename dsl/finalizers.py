"""The finalizer stack: compensations pushed during a scenario → run LIFO at its end, always.

Every finalizer runs even when an earlier one fails or the run is interrupted (Ctrl-C); failures
are collected and raised together afterwards, never swallowed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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


class FinalizerStack:
    """LIFO compensations for one scope (a scenario)."""

    def __init__(self) -> None:
        self._stack: list[Finalizer] = []
        self.ran: list[str] = []

    def push(self, func: Callable[[], Any], description: str) -> None:
        self._stack.append(Finalizer(func, description))

    def __len__(self) -> int:
        return len(self._stack)

    def run(self) -> None:
        """Run everything pushed, newest first; then raise what failed (Ctrl-C after all ran)."""
        failures: list[tuple[str, BaseException]] = []
        interrupt: BaseException | None = None
        while self._stack:
            fin = self._stack.pop()
            try:
                fin.func()
                self.ran.append(fin.description)
            except (KeyboardInterrupt, SystemExit) as exc:
                interrupt = interrupt or exc
                failures.append((fin.description, exc))
            except Exception as exc:
                failures.append((fin.description, exc))
        if interrupt is not None:
            raise interrupt
        if failures:
            raise FinalizerError(failures)
