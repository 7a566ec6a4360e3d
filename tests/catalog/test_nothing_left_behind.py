"""Nothing left behind, whatever happens: a SIGINT after any API request of a catalog scenario
ends with no object of the run and every GPU at its default — verified by the twin target on the
twin itself and by the run-end check over the API; a stuck API during cleanup ends the run at its
bound. (The catalog at a 10 % API fault rate: test_verified_teardown, on the world runs.)

The interruption matrix samples its points so that CI on two cores stays affordable: the first
requests (discovery, the leftover sweep, the first creates), then every `STRIDE`-th one up to
the end of the scenario. `bench/bench_cleanup.py` tries every single request.
"""

from __future__ import annotations

import time

import pytest
from catalog_runs import run_catalog
from cleanup_recorder import CleanupRecorder
from twin_fault_flips import FlipBeforeTeardown

from stepgraph.steps._cluster import SIGINT_AFTER_ENV

SCENARIO = "conflict.feature"  # topology, a bystander created and deleted, GPU caps written and restored
FIRST = range(1, 6)
STRIDE = 9
# The last point (60) is past the scenario's last request (its 53rd, on the twin's virtual clock,
# where a window polls only when the cluster can have changed), so that run is not interrupted at
# all; points after it would be that same run again. A scenario grown past it fails the matrix's
# last check.
LAST_TRIED = 69


def _run(monkeypatch: pytest.MonkeyPatch, after: int | None, *args: str) -> tuple[int, CleanupRecorder]:
    if after is None:
        monkeypatch.delenv(SIGINT_AFTER_ENV, raising=False)
    else:
        monkeypatch.setenv(SIGINT_AFTER_ENV, str(after))
    recorder = CleanupRecorder()
    run = run_catalog("--target-option", "world=path-b", *args, files=(SCENARIO,), plugins=(recorder,))
    return run.returncode, recorder


def test_a_sigint_after_any_api_request_stops_the_run_and_leaves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    interrupted = []
    for after in sorted({*FIRST, *range(FIRST.stop, LAST_TRIED, STRIDE)}):
        code, cleanup = _run(monkeypatch, after)
        where = f"SIGINT after request {after}: exit {code}, {cleanup.summary}"
        assert code == (2 if cleanup.interrupted else 0), where  # pytest's "interrupted" exit code
        assert cleanup.summary.endswith("the twin target: nothing left behind"), where
        interrupted += [after] if cleanup.interrupted else []
    assert len(interrupted) >= 10, f"only {interrupted} interrupted the scenario: LAST_TRIED is too low for it"
    assert interrupted[-1] < LAST_TRIED - STRIDE, "the scenario makes more requests than the matrix reaches"


def test_a_stuck_api_during_cleanup_ends_the_run_at_the_bound_naming_what_was_not_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SIGINT_AFTER_ENV, raising=False)
    recorder = CleanupRecorder()
    # Once the steps are done, every API request waits a minute for its answer: a stuck server.
    stuck = FlipBeforeTeardown({"api_fault_rate": 1.0, "api_fault_kinds": ["latency"], "api_latency_seconds": 60})
    started = time.monotonic()
    run = run_catalog("--target-option", "world=path-b", "--cleanup-timeout", "2", files=(SCENARIO,), plugins=(recorder, stuck))
    took = time.monotonic() - started
    assert run.returncode == 1, run.output[-3000:]
    assert recorder.summary.startswith("stepgraph cleanup: LEFT BEHIND: "), recorder.summary
    not_undone = [item for item in recorder.left if item.startswith("not undone: ")]
    assert any("topology.running" in item for item in not_undone), recorder.left
    assert "not undone: restore every GPU to its default limit" in recorder.left, recorder.left
    assert any(item.startswith("not done: the run-end check") for item in recorder.left), recorder.left
    assert any("is at" in item and "not its default" in item for item in recorder.left), recorder.left  # the twin's own check
    assert took < 60, f"{took:.0f} s: the bound did not hold"
