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


@runtime_checkable
class QuietClock(Protocol):
    """A clock that can say until when nothing will happen on it — the twin's virtual clock, on
    which the cluster changes only when a timer fires or a caller asks it to. The waits of
    `eventually` and `throughout` use it to make only the observations that can differ.

    `quiet_until()`: the time of the next timer (`math.inf` if none is set); `readings()`: how
    many times its time has been read, so a wait can tell an observation that read the time
    (which changes by itself) from one that read only the system."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...

    def quiet_until(self) -> float: ...

    def readings(self) -> int: ...


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
