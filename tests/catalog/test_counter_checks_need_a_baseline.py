"""Static check 7 and the catalog: counter checks compare against a baseline bound in the same
scenario; the one absolute counter check is declared as such, so the compiler rejects it after a
scenario that increments the agent's counters — and the catalog itself has no such hazard."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stepgraph.dsl import REGISTRY, Ref
from stepgraph.dsl.cli import main
from stepgraph.dsl.compiler import compile_file

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "scenarios" / "multi_dgd"
RELATIVE_CHECKS = {"agent.counter_grew", "agent.counter_unchanged", "agent.counter_unchanged_or_absent"}


def test_counter_checks_are_relative_or_declared_absolute() -> None:
    REGISTRY.load_entry_points()
    checks = {d.id: d for d in REGISTRY if d.keyword == "then" and "counter" in d.id}
    assert set(checks) == RELATIVE_CHECKS | {"agent.counter_is"}
    for step_id in RELATIVE_CHECKS:
        since = checks[step_id].params.model_fields["since"]
        assert since.annotation is Ref and since.is_required() and not checks[step_id].absolute
    assert checks["agent.counter_is"].absolute == {"agent-counters"}
    assert "increments-agent-counters" in REGISTRY.steps["agent.conflict_bystander"].effects


def test_catalog_counter_checks_read_a_baseline_taken_in_the_same_scenario() -> None:
    REGISTRY.load_entry_points()  # the step libraries, whichever test of this process ran first
    checked = 0
    for path in sorted(p for p in CATALOG.iterdir() if p.suffix in (".feature", ".yaml")):
        compiled = compile_file(path, REGISTRY)
        assert compiled.ok, compiled.diagnostics
        for scenario in compiled.feature.scenarios:
            calls = [*compiled.feature.background, *scenario.steps]
            assert not any(c.decl.absolute for c in calls), (path.name, scenario.name)
            for i, call in enumerate(calls):
                if call.step_id in RELATIVE_CHECKS:
                    producers = [c for c in calls[:i] if c.bind_as == call.params.since.name]
                    assert [c.step_id for c in producers] == ["agent.baseline"], (path.name, scenario.name)
                    topology = max(j for j, c in enumerate(calls) if c.step_id == "topology.running")
                    assert calls.index(producers[0]) > topology, "baseline after the topology is up"
                    checked += 1
    assert checked == 18  # B5 (2), B4-D3 (5), B8 (1), B1, B3, B7, E1, E3 (2 each): every counter check of the catalog


ABSOLUTE = """\
@id:B4-ABSOLUTE @design:8.5.5
Feature: The seed's absolute zero-counter check
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario: Counters are absolutely zero
    Then the counter "multi_pod_gpu_total" is 0
"""


def _lint(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`stepgraph lint FOLDER` in this process → exit code, what it printed."""
    code = main(["lint", str(folder)])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_lint_rejects_an_absolute_counter_check_after_the_conflict_scenario(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    shutil.copy(CATALOG / "conflict.feature", tmp_path / "a_conflict.feature")
    (tmp_path / "b_absolute.feature").write_text(ABSOLUTE)
    code, printed = _lint(tmp_path, capsys)
    assert code == 2
    assert "b_absolute.feature:8:" in printed
    assert "agent.counter_is asserts the absolute value of agent-counters" in printed
    (tmp_path / "b_absolute.feature").rename(tmp_path / "0_absolute.feature")  # now it runs first
    assert _lint(tmp_path, capsys)[0] == 0
