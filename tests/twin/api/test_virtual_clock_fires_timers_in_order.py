"""The virtual clock: time moves only in sleep, timers fire in time order, deterministically."""

from __future__ import annotations

import threading

import pytest
from stepgraph.twin.clock import RealTimeClock, VirtualClock, make_clock


def test_sleep_fires_due_timers_in_time_order_then_lands_on_target():
    clock = VirtualClock()
    seen: list[tuple[str, float]] = []
    clock.call_later(5, lambda: seen.append(("b", clock.now())))
    clock.call_later(1, lambda: seen.append(("a", clock.now())))
    clock.call_later(5, lambda: seen.append(("c", clock.now())))  # tie → scheduling order
    clock.call_later(20, lambda: seen.append(("late", clock.now())))
    clock.sleep(10)
    assert seen == [("a", 1.0), ("b", 5.0), ("c", 5.0)]
    assert clock.now() == 10.0


def test_time_does_not_move_without_sleep():
    clock = VirtualClock()
    fired = []
    clock.call_later(0.001, lambda: fired.append(1))
    assert clock.now() == 0.0 and fired == []


def test_cancelled_timer_never_fires():
    clock = VirtualClock()
    fired = []
    handle = clock.call_later(1, lambda: fired.append(1))
    handle.cancel()
    clock.sleep(2)
    assert fired == []


def test_every_repeats_until_cancelled_and_timers_scheduled_by_timers_fire_in_the_same_sleep():
    clock = VirtualClock()
    ticks: list[float] = []
    handle = clock.every(15, lambda: ticks.append(clock.now()))
    clock.call_later(2, lambda: clock.call_later(1, lambda: ticks.append(-clock.now())))
    clock.sleep(45)
    assert ticks == [0.0, -3.0, 15.0, 30.0, 45.0]
    handle.cancel()
    clock.sleep(100)
    assert ticks == [0.0, -3.0, 15.0, 30.0, 45.0]


def test_a_failing_callback_does_not_stop_time():
    clock = VirtualClock()
    after = []
    clock.call_later(1, lambda: 1 / 0)
    clock.call_later(2, lambda: after.append(clock.now()))
    clock.sleep(3)
    assert after == [2.0]


def test_timers_scheduled_from_another_thread_are_seen():
    clock = VirtualClock()
    fired = []
    t = threading.Thread(target=lambda: clock.call_later(1, lambda: fired.append(1)))
    t.start()
    t.join()
    clock.sleep(1)
    assert fired == [1]


def test_bad_arguments_are_rejected_clearly():
    clock = VirtualClock()
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        clock.sleep(-1)
    with pytest.raises(ValueError, match="interval must be > 0"):
        clock.every(0, lambda: None)
    with pytest.raises(ValueError, match="unknown clock"):
        make_clock("sundial")


def test_wall_time_is_reproducible_on_the_virtual_clock():
    a, b = VirtualClock(), VirtualClock()
    a.sleep(3)
    b.sleep(3)
    assert a.wall() == b.wall()


def test_real_time_clock_runs_timers_on_its_own_thread():
    clock = RealTimeClock()
    done = threading.Event()
    try:
        clock.call_later(0.01, done.set)
        assert done.wait(timeout=5)
    finally:
        clock.close()


def test_both_clocks_satisfy_the_dsl_clock_protocol():
    from stepgraph.dsl.clock import Clock

    real = RealTimeClock()
    try:
        assert isinstance(VirtualClock(), Clock) and isinstance(real, Clock)
    finally:
        real.close()
