"""On the twin's virtual clock a window polls only when the cluster can have changed since the
last poll: polls before the next timer are not made, unless the last one read the time or let
some pass. The window's verdict and the moment it ends are those of polling every interval."""

from __future__ import annotations

import pytest

from stepgraph.dsl.eventually import EventuallyTimeout, ThroughoutBroken, eventually, throughout
from stepgraph.twin.clock import VirtualClock


class PlainClock:
    """The same virtual time, without saying until when it is quiet: polls every interval."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock

    def now(self) -> float:
        return self.clock.now()

    def sleep(self, seconds: float) -> None:
        self.clock.sleep(seconds)


def _world(flip_at: float) -> tuple[VirtualClock, dict[str, int]]:
    clock = VirtualClock()
    state = {"value": 0}
    clock.call_later(flip_at, lambda: state.update(value=1))
    return clock, state


@pytest.mark.parametrize("plain", [False, True], ids=["quiet clock", "plain clock"])
def test_eventually_ends_when_the_timer_has_changed_the_cluster(plain: bool) -> None:
    clock, state = _world(7.5)
    polls = []

    def flipped() -> None:
        polls.append(state["value"])
        assert state["value"] == 1

    eventually(flipped, timeout=30, clock=PlainClock(clock) if plain else clock, interval=1.0)
    assert clock.now() == 8.0  # the first poll time after the timer, either way
    assert polls == ([0] * 8 if plain else [0]) + [1]


def test_a_condition_that_reads_the_time_is_polled_every_interval() -> None:
    clock, state = _world(7.5)
    polls = []

    def flipped() -> None:
        polls.append(clock.now())  # the time changes by itself: no poll can be left out
        assert state["value"] == 1

    eventually(flipped, timeout=30, clock=clock, interval=1.0)
    assert polls == [float(t) for t in range(9)]


def test_a_condition_that_lets_time_pass_is_polled_again_one_interval_later() -> None:
    clock, state = _world(7.5)
    polls = []

    def flipped() -> None:
        polls.append(state["value"])
        clock.sleep(0.25)  # a retry's back-off: timers may fire inside the observation
        assert state["value"] == 1

    eventually(flipped, timeout=30, clock=clock, interval=1.0)
    assert len(polls) == 7 and clock.now() == 7.75  # polls at 0, 1.25, 2.5 … 7.5: 0.25 s each and 1 s between them


def test_with_no_timer_set_the_next_poll_is_at_the_deadline_and_the_failure_is_the_same() -> None:
    clock = VirtualClock()
    polls = []

    def never() -> None:
        polls.append(1)
        raise AssertionError("not yet")

    with pytest.raises(EventuallyTimeout, match=r"still failing after 10 s \(2 attempts\)"):
        eventually(never, timeout=10, clock=clock, interval=1.0)
    assert clock.now() == 10.0 and len(polls) == 2


@pytest.mark.parametrize("plain", [False, True], ids=["quiet clock", "plain clock"])
def test_throughout_fails_at_the_first_poll_after_the_timer_broke_it(plain: bool) -> None:
    clock, state = _world(7.5)

    def still_zero() -> None:
        assert state["value"] == 0, "changed"

    with pytest.raises(ThroughoutBroken, match=r"stopped holding after 8 s of 30 s \(observation (2|9)\)"):
        throughout(still_zero, duration=30, clock=PlainClock(clock) if plain else clock, interval=1.0)
    assert clock.now() == 8.0


def test_throughout_that_holds_ends_at_its_end_with_a_poll_there() -> None:
    clock, state = _world(100.0)
    polls = []

    def still_zero() -> int:
        polls.append(1)
        assert state["value"] == 0
        return state["value"]

    assert throughout(still_zero, duration=30, clock=clock, interval=1.0) == 0
    assert clock.now() == 30.0 and len(polls) == 2
