"""A caps check in any GPU order that fails shows expected and observed side by side per GPU: the
expected multiset laid out on the GPUs (matching values stay with their GPU), not a sorted list
against a dict."""

from __future__ import annotations

import pytest

from stepgraph.dsl import CheckFailed, ManualClock, eventually
from stepgraph.dsl.failures import failure_block
from stepgraph.steps._caps import require_caps_multiset

OBSERVED = {0: 400, 1: 300, 2: 325, 3: 325, 4: 325, 5: 350, 6: 375, 7: 375}


def test_a_failed_caps_multiset_is_a_per_gpu_table_marking_the_gpu_that_differs() -> None:
    def check() -> None:
        require_caps_multiset("NVML power limits", "300×2, 325×3, 350, 375×2", OBSERVED)

    with pytest.raises(CheckFailed) as failure:
        eventually(check, timeout=2, interval=1, clock=ManualClock())
    block = failure_block("s.feature:4:5", "Then within 2 s …", "S", "s.feature:2:3", failure.value).splitlines()
    assert block[3:15] == [
        "  expected: [300, 300, 325, 325, 325, 350, 375, 375]",
        "  observed: {0: 400, 1: 300, 2: 325, 3: 325, 4: 325, 5: 350, 6: 375, 7: 375}",
        "     expected  observed",
        "  0  300       400       ✗",
        "  1  300       300",
        "  2  325       325",
        "  3  325       325",
        "  4  325       325",
        "  5  350       350",
        "  6  375       375",
        "  7  375       375",
        "  last observations (time since the window opened):",
    ]


def test_expected_caps_beyond_the_gpus_are_shown_without_a_gpu() -> None:
    with pytest.raises(CheckFailed) as failure:
        require_caps_multiset("NVML power limits", "300, 325×2", {0: 325})
    assert failure_block("s:1:1", "Then …", "S", "s:1:1", failure.value).splitlines()[5:] == [
        "            expected    observed",
        "  0         325         325",
        "  (no GPU)  [300, 325]  —         ✗",
    ]
