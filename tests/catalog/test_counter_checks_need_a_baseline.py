"""Static check 7 by construction: every agent-counter check reads a baseline bound in the same
scenario, so no counter verdict depends on which scenarios ran earlier in the agent's lifetime."""

from __future__ import annotations

from pathlib import Path

from stepgraph.dsl import REGISTRY, Ref
from stepgraph.dsl.compiler import compile_file

ROOT = Path(__file__).resolve().parents[2]
BASELINE_STEP = "agent.baseline"


def _counter_checks() -> list:
    REGISTRY.load_entry_points()
    return [d for d in REGISTRY if d.keyword == "then" and "counter" in d.id]


def test_every_counter_check_compares_against_a_bound_baseline() -> None:
    checks = _counter_checks()
    assert {d.id for d in checks} == {"agent.counter_grew", "agent.counter_unchanged"}
    for decl in checks:
        since = decl.params.model_fields["since"]
        assert since.annotation is Ref and since.is_required(), decl.id


def test_catalog_counter_checks_read_a_baseline_taken_in_the_same_scenario() -> None:
    checked = 0
    for path in sorted((ROOT / "scenarios" / "multi_dgd").glob("*.*")):
        if path.suffix not in (".feature", ".yaml"):
            continue
        compiled = compile_file(path, REGISTRY)
        assert compiled.ok, compiled.diagnostics
        for scenario in compiled.feature.scenarios:
            calls = [*compiled.feature.background, *scenario.steps]
            for i, call in enumerate(calls):
                if call.step_id in ("agent.counter_grew", "agent.counter_unchanged"):
                    producers = [c for c in calls[:i] if c.bind_as == call.params.since.name]
                    assert [c.step_id for c in producers] == [BASELINE_STEP], (path.name, scenario.name)
                    topology = max(j for j, c in enumerate(calls) if c.step_id == "topology.running")
                    assert calls.index(producers[0]) > topology, "baseline after the topology is up"
                    checked += 1
    assert checked == 8  # B5 (2), B4-D3 (5), B8 (1): every counter check of the catalog
