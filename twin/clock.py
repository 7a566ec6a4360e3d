"""Twin time → a virtual clock (time moves only when someone sleeps) and a real-time clock.

Both clocks share one timer API, so the kubelet, the Power Agent and the planners schedule work
the same way whether a test drives the twin or a person runs `stepgraph twin up`:

- `now()` — monotonic seconds; `wall()` — epoch seconds (for creationTimestamp and friends).
- `sleep(s)` — return once `s` seconds have passed.  On the virtual clock this *is* the passing of
  time: due timers fire in time order (ties in scheduling order) on the sleeping thread, then
  `now()` lands on the target.  Deterministic: the same calls give the same firing order.
- `call_later(delay, fn)` → a `Timer` with `cancel()`; `every(interval, fn, first_delay=0)` → a
  `Timer` that re-arms itself after each call until cancelled.

`ScaledClock` is real time that leaps while every real program waits: `rate` twin seconds per
wall second (75 by default: one 15 s agent tick in 0.2 s) while none runs, one per wall second
while one does.  Worlds that run real programs use it, because a child process cannot be paused
the way the virtual clock pauses in-process components; `child_time()` is the contract (a shared
file and environment variables) that makes a child's clock follow the very same function —
`twin/process/child/` reads it.

All satisfy `stepgraph.dsl.clock.Clock` structurally (no import: the twin stands alone).
Thread safety: timers may be scheduled from any thread (the HTTP server thread schedules kubelet
start-ups); callbacks run without the clock's lock held, so they may schedule or cancel timers.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import mmap
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
        self._readings = 0

    def now(self) -> float:
        with self._queue.lock:
            self._readings += 1
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

    def quiet_until(self) -> float:
        """When the next timer fires (`math.inf` if none is set). Everything of the twin that runs
        by itself runs on a timer, so until then the cluster is as it is now, unless a caller's
        request changes it: a wait that only looks can skip the moments in between."""
        due = self._queue.next_due()
        return math.inf if due is None else due

    def readings(self) -> int:
        """How many times the time was read (`now`, `wall`, and `sleep` through them)."""
        with self._queue.lock:
            return self._readings

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
TIME_STATE_ENV = "STEPGRAPH_TIME_STATE"      # path of the shared clock state (layout: CLOCK_STATE)
TIME_RATE_ENV = "STEPGRAPH_TIME_RATE"        # the leaping rate (twin seconds per wall second)
#: The shared state: a sequence number (odd while the twin rewrites it), then the current piece of
#: time: CLOCK_MONOTONIC at its start, the twin's now() there, its rate, the twin time where the leap
#: ends (real time after it; inf: none), and the twin's epoch (wall() − now()).
CLOCK_STATE = struct.Struct("<Q5d")


def piece_now(at: float, start: float, base: float, rate: float, until: float) -> float:
    """The twin's now() at CLOCK_MONOTONIC `at` on a piece: `rate` from `base` up to `until`, then
    real time. The child's start-up hook computes the very same function."""
    leapt = base + max(0.0, at - start) * rate
    if leapt <= until:
        return leapt
    return until + (at - start - (until - base) / rate)


def piece_wall(target: float, start: float, base: float, rate: float, until: float) -> float:
    """CLOCK_MONOTONIC at which a piece reaches twin time `target` (the inverse of piece_now)."""
    if target <= until:
        return start + max(0.0, target - base) / rate
    return start + (until - base) / rate + (target - until)


class ScaledClock(RealTimeClock):
    """Real time that leaps while every real program waits.

    A real program's work takes real time; on a clock sped up `rate` times all along, its
    reconcile or its start-up would last `rate` times as long as on a node (a 1 s start is 75 twin
    seconds), and more the busier the machine. So the clock leaps at `rate` only while every
    program the twin started waits, and only up to the earliest instant one of them (or a
    `sleep` of the twin's own callers, the scenario steps) wakes; from there, and while any
    `running(key, True)` holds it — a program's start-up until its first wait, its threads between
    waits, an exec'd command —, it runs at real time. Waiting, which is what a tick mostly is, is
    compressed; work and the lateness of a wake-up take the time they take on a node.

    `now()` is piecewise: each change starts a new piece (see `piece_now`), written to the shared
    state children map, so a child reads the same instants as the twin with no message per reading.
    """

    def __init__(self, rate: float = DEFAULT_RATE, epoch: float | None = None) -> None:
        if not rate > 0:
            raise ValueError(f"ScaledClock: rate must be > 0, got {rate}")
        self.rate = float(rate)
        self._epoch = float(time.time() if epoch is None else epoch)  # twin wall time at now() == 0
        self._piece = (time.monotonic(), 0.0, self.rate, math.inf)  # (CLOCK_MONOTONIC, now(), rate, until)
        self._running: set[object] = set()
        self._wakes: dict[object, float] = {}  # waiting key → the twin time it wakes at
        self._rate_lock = threading.Lock()
        self._rate_changed = threading.Condition(threading.Lock())  # sleepers re-plan their wait
        self._shared: tuple[Any, mmap.mmap] | None = None  # (file, mapping) the children read
        self._seq = 0
        super().__init__()

    def now(self) -> float:
        at = time.monotonic()
        return piece_now(at, *self._piece)  # one tuple: a consistent piece; a newer one starts at or after `at`

    def wall(self) -> float:
        return self._epoch + self.now()

    @property
    def current_rate(self) -> float:
        """Twin seconds per wall second right now."""
        start, base, rate, until = self._piece
        return rate if piece_now(time.monotonic(), start, base, rate, until) < until else 1.0

    def _wall_seconds(self, seconds: float) -> float:
        piece = self._piece
        at = time.monotonic()
        return max(0.0, piece_wall(piece_now(at, *piece) + seconds, *piece) - at)

    def sleep(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"sleep(): seconds must be >= 0, got {seconds}")
        deadline = self.now() + seconds
        key = object()
        self._change(key, wakes=deadline)  # the clock must not leap past a step's wake-up
        try:
            with self._rate_changed:
                while (left := deadline - self.now()) > 0:
                    self._rate_changed.wait(self._wall_seconds(left))
        finally:
            self._change(key)

    def running(self, key: object, on: bool, wakes: float | None = None) -> None:
        """`key` — a program's start-up, a process of one, an exec'd command — runs (`on`), or waits
        (until twin time `wakes`; None: until woken by someone else) or has ended."""
        if on:
            self._change(key, running=True)
        else:
            self._change(key, wakes=wakes)

    def _change(self, key: object, *, running: bool = False, wakes: float | None = None) -> None:
        with self._rate_lock:
            if running:
                self._running.add(key)
            else:
                self._running.discard(key)
            if wakes is None:
                self._wakes.pop(key, None)
            else:
                self._wakes[key] = wakes
            at = time.monotonic()
            now = piece_now(at, *self._piece)
            if self._running:
                piece = (at, now, 1.0, math.inf)
            else:
                piece = (at, now, self.rate, max(now, min(self._wakes.values(), default=math.inf)))
            if piece[2:] == self._piece[2:]:
                return
            self._piece = piece
            self._publish()
        for cond in (self._wake, self._rate_changed):  # timers and sleepers planned on the old piece
            with cond:
                cond.notify_all()

    def child_time(self, folder: Path) -> dict[str, str]:
        """The environment that gives a child process this clock: the shared state (a file in
        `folder`, which the caller removes after `close()`) and the leaping rate."""
        with self._rate_lock:
            if self._shared is None:
                f = open(folder / "clock", "w+b")  # noqa: SIM115 - mapped until close()
                f.write(bytes(CLOCK_STATE.size))
                f.flush()
                self._shared = (f, mmap.mmap(f.fileno(), CLOCK_STATE.size))
                self._publish()
            path = Path(self._shared[0].name)
        return {TIME_STATE_ENV: str(path), TIME_RATE_ENV: repr(self.rate)}

    def _publish(self) -> None:
        """Write the current piece for the children (a seqlock: odd while being written)."""
        if self._shared is None:
            return
        mm = self._shared[1]
        self._seq += 1
        mm[:8] = struct.pack("<Q", self._seq)
        mm[8:] = CLOCK_STATE.pack(0, *self._piece, self._epoch)[8:]
        self._seq += 1
        mm[:8] = struct.pack("<Q", self._seq)

    def close(self) -> None:
        super().close()
        with self._rate_lock:
            if self._shared is not None:
                self._shared[1].close()
                self._shared[0].close()
                self._shared = None


def default_kind(runs_programs: bool) -> str:
    """The clock a twin runs on unless told: the scaled one when it runs real programs (a child
    process cannot be paused the way the virtual clock pauses in-process components), else the
    virtual one."""
    return "scaled" if runs_programs else "virtual"


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
