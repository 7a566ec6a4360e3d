"""The zero-counter scenario (B4/D3) holds after the conflict scenario (B5) in the same agent
lifetime: it asserts deltas since its own baseline, so file order no longer matters."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalog_runs import ROOT, run_catalog, world_runs


@pytest.mark.parametrize("world", ["path-b-nvml", "path-a-dcgm"])
def test_zero_counters_pass_after_the_conflict_scenario_incremented_them(world: str) -> None:
    run = world_runs()[world]
    order = list(run.outcomes)
    # One pytest process, one twin, one agent: the catalog runs conflict.feature (B5) before
    # zero_counters.yaml (B4-D3), so B5's conflict and safe-default counts are still on the agent.
    assert order.index("B5") < order.index("B4-D3")
    assert run.outcomes["B5"]["outcome"] == run.outcomes["B4-D3"]["outcome"] == "passed"


def test_zero_counters_pass_on_an_agent_without_the_enforce_counter(tmp_path: Path) -> None:
    """PA-late has no dcgm_enforce_failures_total: the scenario allows that family to be absent."""
    world = (ROOT / "examples" / "profiles" / "path-b.yaml").read_text().replace("generation: PA-9790", "generation: PA-late")
    (tmp_path / "pa-late.yaml").write_text(world)
    run = run_catalog("--target-option", f"world={tmp_path / 'pa-late.yaml'}", files=("zero_counters.yaml",))
    assert run.outcomes["B4-D3"]["outcome"] == "passed", run.output
