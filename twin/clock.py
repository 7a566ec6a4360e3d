"""Twin time → a virtual clock (time moves only when someone sleeps) and a real-time clock.

Both clocks share one timer API, so the kubelet, the Power Agent and the planners schedule work
the same way whether a test drives the twin or a person runs `stepgraph twin up`:

- `now()` — monotonic seconds; `wall()` — epoch seconds (for creationTimestamp and friends).
- `sleep(s)` — return once `s` seconds have passed.  On the virtual clock this *is* the passing of
  time: due timers fire in time order (ties in scheduling order) on the sleeping thread, then
  `now()` lands on the target.  Deterministic: the same calls give the same firing order.
- `call_later(delay, fn)` → a `Timer` with `cancel()`; `every(interval, fn, first_delay=0)` → a
  `Timer` that re-arms itself after each call until cancelled.

`ScaledClock` is real time sped up by a fixed rate (75 twin seconds per wall second by default:
one 15 s agent tick in 0.2 s).  Worlds that run real programs use it, because a child process
cannot be paused the way the virtual clock pauses in-process components; `child_time()` is the
contract (environment variables) that makes a child's clock run at the same rate from the same
epoch — `twin/process/child/` reads it.

All satisfy `stepgraph.dsl.clock.Clock` structurally (no import: the twin stands alone).
Thread safety: timers may be scheduled from any thread (the HTTP server thread schedules kubelet
start-ups); callbacks run without the clock's lock held, so they may schedule or cancel timers.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

# Virtual wall time starts at a fixed instant so timestamps are reproducible run to run.
VIRTUAL_EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z


class Timer:
    """A scheduled callback; `cancel()` stops it (and, for `every`, all later repeats)."""

    __slots__ = ("_seq", "cancelled", "due", "fn", "interval")

    def __init__(self, due: float, fn: Callable[[], object], interval: float | None, seq: int) -> None:
        self.due = due
        self.fn = fn
        self.interval = interval
        self.cancelled = False
        self._seq = seq

    def cancel(self) -> None:
        self.cancelled = True

    def __lt__(self, other: Timer) -> bool:
        return (self.due, self._seq) < (other.due, other._seq)


class _TimerQueue:
    """The heap both clocks keep; `pop_due(t)` hands out timers due at or before `t`."""

    def __init__(self) -> None:
        self._heap: list[Timer] = []
        self._seq = itertools.count()
        self.lock = threading.RLock()

    def push(self, due: float, fn: Callable[[], object], interval: float | None) -> Timer:
        if interval is not None and interval <= 0:
            raise ValueError(f"every(): interval must be > 0, got {interval}")
        timer = Timer(due, fn, interval, next(self._seq))
        with self.lock:
            heapq.heappush(self._heap, timer)
        return timer

    def rearm(self, timer: Timer) -> None:
        assert timer.interval is not None
        with self.lock:
            timer.due += timer.interval
            timer._seq = next(self._seq)
            heapq.heappush(self._heap, timer)

    def pop_due(self, t: float) -> Timer | None:
        with self.lock:
            while self._heap and self._heap[0].cancelled:
                heapq.heappop(self._heap)
            if self._heap and self._heap[0].due <= t:
                return heapq.heappop(self._heap)
            return None

    def next_due(self) -> float | None:
        with self.lock:
            live = [t.due for t in self._heap if not t.cancelled]
            return min(live) if live else None

    def pending(self) -> int:
        with self.lock:
            return sum(1 for t in self._heap if not t.cancelled)


def _fire(queue: _TimerQueue, timer: Timer) -> None:
    """Run one timer; a failing callback is logged, never allowed to stop the clock."""
    try:
        timer.fn()
    except Exception:  # a broken component must not wedge time for everyone else
        log.exception("timer callback %r failed", timer.fn)
    if timer.interval is not None and not timer.cancelled:
        queue.rearm(timer)


class VirtualClock:
    """Deterministic time: it advances only inside `sleep`, firing due timers in order."""

    def __init__(self, start: float = 0.0, epoch: float = VIRTUAL_EPOCH) -> None:
        self._now = float(start)
        self._epoch = epoch - start
        self._queue = _TimerQueue()
        self._sleeping = threading.RLock()  # one advancer at a time keeps the order total

    def now(self) -> float:
        with self._queue.lock:
            return self._now

    def wall(self) -> float:
        return self._epoch + self.now()

    def call_later(self, delay: float, fn: Callable[[], object]) -> Timer:
        return self._queue.push(self.now() + max(0.0, delay), fn, None)

    def every(self, interval: float, fn: Callable[[], object], first_delay: float = 0.0) -> Timer:
        return self._queue.push(self.now() + max(0.0, first_delay), fn, interval)

    def sleep(self, seconds: float) -> None:
        """Advance by `seconds` (0 fires whatever is already due), running timers on the way."""
        if seconds < 0:
            raise ValueError(f"sleep(): seconds must be >= 0, got {seconds}")
        with self._sleeping:
            target = self.now() + seconds
            while (timer := self._queue.pop_due(target)) is not None:
                with self._queue.lock:
                    self._now = max(self._now, timer.due)
                _fire(self._queue, timer)
            with self._queue.lock:
                self._now = max(self._now, target)

    advance = sleep

    def run_due(self) -> None:
        """Fire timers due now without moving time (e.g. after a `call_later(0, …)`)."""
        self.sleep(0.0)

    def next_due(self) -> float | None:
        return self._queue.next_due()

    def pending(self) -> int:
        return self._queue.pending()


class RealTimeClock:
    """Wall-clock time with the same timer API; timers run on one daemon thread."""

    def __init__(self) -> None:
        self._queue = _TimerQueue()
        self._wake = threading.Condition(self._queue.lock)
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="twin-clock", daemon=True)
        self._thread.start()

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"sleep(): seconds must be >= 0, got {seconds}")
        time.sleep(self._wall_seconds(seconds))

    def _wall_seconds(self, seconds: float) -> float:
        """How long `seconds` of this clock's time take on the machine's clock."""
        return seconds

    def call_later(self, delay: float, fn: Callable[[], object]) -> Timer:
        return self._schedule(self._queue.push(self.now() + max(0.0, delay), fn, None))

    def every(self, interval: float, fn: Callable[[], object], first_delay: float = 0.0) -> Timer:
        return self._schedule(self._queue.push(self.now() + max(0.0, first_delay), fn, interval))

    def _schedule(self, timer: Timer) -> Timer:
        with self._wake:
            self._wake.notify()
        return timer

    def close(self) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._wake:
                if self._stopped:
                    return
                due = self._queue.next_due()
                delay = None if due is None else due - self.now()
                if delay is None or delay > 0:
                    self._wake.wait(timeout=None if delay is None else self._wall_seconds(delay))
                    continue
            while (timer := self._queue.pop_due(self.now())) is not None:
                _fire(self._queue, timer)


DEFAULT_RATE = 75.0  # one 15 s agent tick in 0.2 s of wall time

# The time contract a child process reads (see `ScaledClock.child_time`).
TIME_RATE_ENV = "STEPGRAPH_TIME_RATE"        # twin seconds per wall second
TIME_ANCHOR_ENV = "STEPGRAPH_TIME_ANCHOR"    # "<CLOCK_MONOTONIC s>,<twin monotonic s>,<twin epoch s>" at one instant


class ScaledClock(RealTimeClock):
    """Real time sped up `rate` times: `now()` and `wall()` move `rate` twin seconds per wall second.

    Both are one linear function of the machine's CLOCK_MONOTONIC (shared by every process on
    the machine), so a child that applies the same function from `child_time()` reads the same
    instants as the twin, with no drift and no messages between them.
    """

    def __init__(self, rate: float = DEFAULT_RATE, epoch: float | None = None) -> None:
        if not rate > 0:
            raise ValueError(f"ScaledClock: rate must be > 0, got {rate}")
        self.rate = float(rate)
        self._anchor = time.monotonic()  # CLOCK_MONOTONIC, the same clock in every process
        self._epoch = float(time.time() if epoch is None else epoch)  # twin wall time at now() == 0
        super().__init__()

    def now(self) -> float:
        return (time.monotonic() - self._anchor) * self.rate

    def wall(self) -> float:
        return self._epoch + self.now()

    def _wall_seconds(self, seconds: float) -> float:
        return seconds / self.rate

    def child_time(self) -> dict[str, str]:
        """The environment that gives a child process this clock (rate, and one shared instant)."""
        return {
            TIME_RATE_ENV: repr(self.rate),
            TIME_ANCHOR_ENV: f"{self._anchor!r},0.0,{self._epoch!r}",
        }


def make_clock(kind: str | VirtualClock | RealTimeClock) -> VirtualClock | RealTimeClock:
    """`"virtual"` → VirtualClock, `"real"` → RealTimeClock, `"scaled"` / `"scaled:<rate>"` →
    ScaledClock; a clock object passes through."""
    if not isinstance(kind, str):
        return kind
    if kind == "virtual":
        return VirtualClock()
    if kind == "real":
        return RealTimeClock()
    if kind == "scaled" or kind.startswith("scaled:"):
        rate = kind.partition(":")[2] or str(DEFAULT_RATE)
        try:
            return ScaledClock(float(rate))
        except ValueError:
            raise ValueError(f"clock {kind!r}: the rate must be a number > 0, e.g. 'scaled:75'") from None
    raise ValueError(f"unknown clock {kind!r} — use 'virtual', 'real' or 'scaled[:<rate>]'")
