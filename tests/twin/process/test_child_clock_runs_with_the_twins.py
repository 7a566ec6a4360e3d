"""A child program's clock is the twin's scaled clock: same epoch, same rate, for time.* and for
the threading waits a Power Agent ticks on (Event.wait), which libfaketime cannot scale; and the
clock leaps only while every program waits, so a program's own work takes real time."""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from pathlib import Path

import pytest

from stepgraph.twin.clock import CLOCK_STATE, ScaledClock, VirtualClock, make_clock, piece_now
from stepgraph.twin.process.view import NodeView, ViewError

WAITS = """
import json, queue, threading, time
out = {"wall0": time.time(), "mono0": time.monotonic()}
t = time.monotonic(); time.sleep(15); out["sleep"] = time.monotonic() - t
t = time.monotonic(); threading.Event().wait(15); out["event"] = time.monotonic() - t
t = time.monotonic()
try:
    queue.Queue().get(timeout=15)
except queue.Empty:
    out["queue"] = time.monotonic() - t
t = time.monotonic(); threading.Timer(15, lambda: None).start(); out["timer_start"] = time.monotonic() - t
out["wall1"], out["mono1"] = time.time(), time.monotonic()
print(json.dumps(out))
"""


def test_time_and_threading_waits_run_at_the_twins_rate(rig):
    view = rig.open()
    twin_before, wall_before, started = rig.clock.now(), rig.clock.wall(), time.monotonic()
    result = rig.run(view, WAITS)
    twin_after, wall_after, real = rig.clock.now(), rig.clock.wall(), time.monotonic() - started
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    # each wait is 15 twin seconds: never less, late only by scheduling (under a second of wall time
    # even on a loaded machine), where an unscaled wait would be 15 wall seconds = 15 × rate twin seconds
    for key in ("sleep", "event", "queue"):
        assert 15 <= seen[key] < 15 + rig.rate, (key, seen[key])
    assert real < 3 * 15 / rig.rate + 5  # 45 twin seconds of waiting in well under 45 s
    # same epoch: the child's instants lie between the twin's readings around the child's life
    assert twin_before <= seen["mono0"] <= seen["mono1"] <= twin_after
    assert wall_before <= seen["wall0"] <= seen["wall1"] <= wall_after


def test_an_unscaled_child_would_take_real_time(rig):
    """The check above can fail: without the contract a 15 s Event.wait takes 15 s of wall time."""
    view = rig.open()
    for name in list(view.env):
        if name.startswith("STEPGRAPH_TIME_"):
            del view.env[name]
    result = rig.run(view, "import threading, time; t = time.monotonic(); threading.Event().wait(0.5); "
                           "print(time.monotonic() - t)")
    assert float(result.stdout) == pytest.approx(0.5, abs=0.2), result.stderr


def test_the_scaled_clock_moves_rate_times_faster_and_fires_timers_on_its_time(tmp_path):
    clock = ScaledClock(rate=100)
    try:
        fired, caps = [], []
        contract = clock.child_time(tmp_path)
        state = Path(contract["STEPGRAPH_TIME_STATE"])
        before0, t0 = time.monotonic(), clock.now()
        clock.call_later(10, lambda: fired.append(clock.now()))
        clock.call_later(15, lambda: caps.append(CLOCK_STATE.unpack(state.read_bytes())[4]))  # while the sleeper waits
        clock.sleep(20)  # 0.2 s of wall time
        woke = time.monotonic()
        t1, after1 = clock.now(), time.monotonic()
        # It leaps to the sleeper's wake-up and never past it: a late wake-up costs real time only.
        # Once the sleeper is gone nobody waits, and it leaps on at `rate` until now() reads it; a
        # thread switch or two (the interpreter's switch interval) may come between its leaving
        # and `woke`, more on a loaded machine.
        assert 20 <= t1 - t0 <= 20 + (woke - before0) + 100 * (after1 - woke + 2 * sys.getswitchinterval())
        assert after1 - before0 >= 20 / 100 - 1e-3  # and the leap is `rate` times the machine's clock
        assert len(fired) == 1 and 10 <= fired[0] - t0 <= t1 - t0
        assert len(caps) == 1 and 20 <= caps[0] - t0 <= t1 - t0  # the leap ends at the sleeper's wake-up
        # the state a child maps gives the very function the twin's clock follows
        assert float(contract["STEPGRAPH_TIME_RATE"]) == 100
        before, now, wall, after = time.monotonic(), clock.now(), clock.wall(), time.monotonic()
        seq, start, base, rate, until, epoch = CLOCK_STATE.unpack(state.read_bytes())
        assert seq % 2 == 0 and rate == 100 and until == math.inf  # nobody waits: it leaps on
        assert piece_now(before, start, base, rate, until) - 1e-6 <= now <= piece_now(after, start, base, rate, until) + 1e-6
        assert epoch + piece_now(before, start, base, rate, until) - 1e-6 <= wall
        assert wall <= epoch + piece_now(after, start, base, rate, until) + 1e-6
    finally:
        clock.close()


def test_while_a_program_runs_the_scaled_clock_runs_at_real_time_and_a_sleeper_follows(tmp_path):
    clock = ScaledClock(rate=100)
    try:
        clock.running("program", True)
        t0, w0 = clock.now(), time.monotonic()
        time.sleep(0.2)
        assert clock.now() - t0 == pytest.approx(time.monotonic() - w0, abs=0.05)  # one twin second per second
        # the state children read changed with it
        contract = clock.child_time(tmp_path)
        assert CLOCK_STATE.unpack(Path(contract["STEPGRAPH_TIME_STATE"]).read_bytes())[3] == 1.0
        # a sleeper planned at real time leaps as soon as the program waits again
        threading.Timer(0.1, clock.running, ("program", False)).start()
        w0 = time.monotonic()
        clock.sleep(30)
        assert time.monotonic() - w0 < 2  # not 30 s: 0.1 s at real time, then 100× faster
    finally:
        clock.close()


def test_make_clock_names_the_scaled_clock_and_rejects_a_bad_rate():
    clock = make_clock("scaled:30")
    try:
        assert isinstance(clock, ScaledClock) and clock.rate == 30
    finally:
        clock.close()
    with pytest.raises(ValueError, match="the rate must be a number > 0"):
        make_clock("scaled:fast")
    with pytest.raises(ValueError, match="the rate must be a number > 0"):
        make_clock("scaled:0")


def test_a_virtual_clock_cannot_drive_a_process(rig):
    from view_rig import _Node, pod

    from stepgraph.twin.workloads import WorkloadContext

    view = NodeView(rig.view.directory, rig.store, VirtualClock(), workdir=rig.workdir)
    try:
        p = pod()
        ctx = WorkloadContext(pod=p, container=p["spec"]["containers"][0], node=_Node(), host=rig.host, gpus=(),
                              clock=VirtualClock(), store=rig.store, log=print, exit=print)
        with pytest.raises(ViewError, match="need a scaled or real clock"):
            view.open(ctx)
    finally:
        view.close()


# The main thread holds an Event's lock exactly as it does inside Event.wait (which the scaled
# clock makes it enter `rate` times as often) when SIGTERM arrives; the handler, run in that same
# thread, sets the Event, as every agent's SIGTERM handler does.
SIGTERM_WHILE_WAITING = """
import os, signal, threading
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
with stop._cond:
    os.kill(os.getpid(), signal.SIGTERM)
    handled = stop.is_set()
print("stopped" if handled else "not stopped")
"""


def test_a_sigterm_handler_setting_the_event_the_main_thread_waits_on_goes_through(rig):
    """With Python's own Event (a plain Lock) this handler deadlocks: the run below times out."""
    result = rig.run(rig.open(), SIGTERM_WHILE_WAITING, timeout=20)
    assert (result.returncode, result.stdout.strip()) == (0, "stopped"), result.stderr


WORK_BETWEEN_WAITS = """
import json, os, threading, time
stop = threading.Event()
stop.wait(15)
t0, e0 = time.monotonic(), os.times().elapsed  # os.times: the machine's own elapsed time, not the twin's
end = time.process_time() + 0.3
while time.process_time() < end:  # 0.3 s of CPU: a reconcile's work
    pass
t1, e1 = time.monotonic(), os.times().elapsed
stop.wait(15)
t2, e2 = time.monotonic(), os.times().elapsed
print(json.dumps({"work": t1 - t0, "work_wall": e1 - e0, "wait": t2 - t1, "wait_wall": e2 - e1}))
"""


def test_a_programs_work_between_waits_takes_real_time_on_the_twins_clock(rig):
    """On a clock sped up all along, the work would last rate (75) times its wall time."""
    result = rig.run(rig.open(), WORK_BETWEEN_WAITS)
    seen = json.loads(result.stdout)
    tick = 0.02  # os.times() counts in clock ticks of 10 ms
    assert seen["work"] == pytest.approx(seen["work_wall"], abs=2 * tick), (seen, result.stderr)
    # the wait leaps over its 15 s; only the machine's lateness in waking it counts, at real time
    assert 15 <= seen["wait"] <= 15 + seen["wait_wall"] + 2 * tick, seen
    assert rig.clock.current_rate == rig.rate  # the program has ended: the clock leaps again
