"""Object timestamps (creationTimestamp, an Event's times, a condition's lastTransitionTime) are
RFC 3339 in UTC to the second, as the API server writes them: the fraction is cut, not rounded."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from stepgraph.twin.apiserver.objects import timestamp
from stepgraph.twin.clock import VIRTUAL_EPOCH


@pytest.mark.parametrize("epoch", [VIRTUAL_EPOCH, VIRTUAL_EPOCH + 0.999, VIRTUAL_EPOCH - 0.001, 951_782_399.5,
                                   951_782_400.0, 4_102_444_799.75, 0.0])
def test_a_moment_is_written_to_its_second_in_utc(epoch: float) -> None:
    assert timestamp(epoch) == datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_many_moments_of_one_day_read_as_the_seconds_they_fall_in() -> None:
    for i in range(20_000):
        epoch = VIRTUAL_EPOCH + i * 4.321
        assert timestamp(epoch) == datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert timestamp(VIRTUAL_EPOCH + 0.999) == "2026-01-01T00:00:00Z"
