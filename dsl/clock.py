"""The Clock protocol, the real clock, and a manual (virtual) one.

Everything in stepgraph that waits goes through a Clock, so the same step code runs on a live
cluster (real time) and on the twin (virtual time: waiting advances time and fires the twin's
timers). The twin's virtual clock satisfies this protocol structurally, without importing it.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Seconds as floats; `now` is monotonic, `sleep` returns once that much time has passed."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class RealClock:
    """Wall-clock time, for live targets."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class ManualClock:
    """Virtual time for targets without a cluster: `sleep` advances `now` instantly."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._now += seconds
