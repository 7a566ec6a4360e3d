"""The zero-counter scenario (B4/D3) holds after the conflict scenario (B5) in the same agent
lifetime: it asserts deltas since its own baseline, so file order no longer matters."""

from __future__ import annotations

from catalog_runs import run_catalog


def test_zero_counters_pass_after_the_conflict_scenario_incremented_them() -> None:
    run = run_catalog("--target-option", "world=path-b", files=("conflict.feature", "zero_counters.yaml"))
    assert run.returncode == 0, run.output[-3000:]
    assert list(run.outcomes) == ["B5", "B4-D3"]  # B5 really ran first, in the same agent lifetime
    assert run.ids("passed") == {"B5", "B4-D3"}
