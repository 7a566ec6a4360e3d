"""The report files as their consumers read them: CI artifact readers, Jenkins' xunit, Cucumber tools."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import xmlschema
from report_samples import SAMPLE_MODES

from stepgraph.dsl.reports.results import write_atomically

# The schema Jenkins' xunit plugin checks JUnit files against before it reads them (MIT, its header kept).
JUNIT_XSD = Path(__file__).parent / "data" / "junit-10.xsd"
REPORTS = ("results.json", "cucumber.json", "junit.xml")


@pytest.mark.parametrize("mode", list(SAMPLE_MODES))
def test_junit_is_valid_for_jenkins_xunit(sample_runs: dict[str, Path], mode: str) -> None:
    junit = sample_runs[mode] / "out" / "junit.xml"
    errors = [f"{e.path}: {e.reason}" for e in xmlschema.XMLSchema10(JUNIT_XSD).iter_errors(junit)]
    assert errors == []


def test_junit_keeps_step_detail_and_the_scenarios_facts(sample_runs: dict[str, Path]) -> None:
    text = (sample_runs["single-process"] / "out" / "junit.xml").read_text()
    assert '<property name="world" value="stub-workers" />' in text
    assert "requirement B2; design B2, 8.5.4" in text
    assert "power.feature:5" in text and "Then every GPU carries its cap ... passed" in text


def test_reports_are_readable_by_other_users_under_the_usual_umask(sample_runs: dict[str, Path]) -> None:
    # The sample runs inherit this process's umask; under 022 a report is 0644.
    umask = os.umask(0o022)
    os.umask(umask)
    for name in REPORTS:
        mode = stat.S_IMODE((sample_runs["single-process"] / "out" / name).stat().st_mode)
        assert mode == 0o666 & ~umask, f"{name}: {oct(mode)}"


def test_an_atomic_write_takes_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomically(tmp_path / "r.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_cucumber_json_says_why_a_scenario_was_skipped(sample_runs: dict[str, Path]) -> None:
    features = json.loads((sample_runs["single-process"] / "out" / "cucumber.json").read_text())
    steps = {el["name"]: el["steps"] for feature in features for el in feature["elements"]}
    assert {s["result"]["status"] for s in steps["Hostengine flaps"]} == {"skipped"}
    assert {s["result"].get("error_message") for s in steps["Hostengine flaps"]} == {"needs DCGM: no hostengine on this target"}
