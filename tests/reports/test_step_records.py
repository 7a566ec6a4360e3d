"""Black-box pytester runs of a small feature: every outcome lands in the results, Cucumber and JUnit files."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from report_samples import SAMPLE_EXPECTED, SAMPLE_MODES, run_sample

from stepgraph.dsl.reports import results
from stepgraph.dsl.reports.cli import main


def _by_id(document: dict) -> dict[str, dict]:
    return {record["id"]: record for record in document["scenarios"]}


@pytest.fixture(params=list(SAMPLE_MODES))
def run(request: pytest.FixtureRequest, sample_runs: dict[str, Path]) -> dict:
    return results.load(sample_runs[request.param] / "out" / "results.json")


def test_every_scenario_is_recorded_with_its_true_outcome(run: dict) -> None:
    assert {sid: record["outcome"] for sid, record in _by_id(run).items()} == SAMPLE_EXPECTED
    assert run["summary"] == {"passed": 1, "failed": 1, "skipped": 2, "undefined": 1, "error": 2, "total": 7}


def test_undefined_step_is_undefined_and_later_steps_are_skipped(run: dict) -> None:
    record = _by_id(run)["C1"]
    assert [step["status"] for step in record["steps"]] == ["passed", "undefined", "skipped"]
    assert record["reason"] == "undefined step: When the planner flips a cap to 460 W"


def test_skipped_scenarios_are_present_with_their_reasons(run: dict) -> None:
    by_id = _by_id(run)
    before_start = by_id["B7"]
    assert before_start["reason"] == "needs DCGM: no hostengine on this target"
    assert [step["status"] for step in before_start["steps"]] == ["skipped", "skipped"]
    in_a_step = by_id["E3"]
    assert in_a_step["reason"] == "DCGM hostengine not deployed"
    assert [step["status"] for step in in_a_step["steps"]] == ["passed", "skipped"]


def test_failing_step_carries_the_assertion_message(run: dict) -> None:
    record = _by_id(run)["B4"]
    assert [step["status"] for step in record["steps"]] == ["passed", "failed"]
    assert "safe_default_applied_total is 0" in record["steps"][1]["error"]


def test_errors_in_setup_and_teardown_are_errors_not_failures(run: dict) -> None:
    by_id = _by_id(run)
    assert by_id["C2"]["reason"] == "setup: RuntimeError: the twin did not start"
    assert by_id["C2"]["phases"]["setup"]["outcome"] == "failed"
    assert by_id["C3"]["reason"] == "teardown: RuntimeError: could not delete the namespace"
    assert [step["status"] for step in by_id["C3"]["steps"]] == ["passed"]


def test_records_carry_design_links_and_environment_facts(run: dict) -> None:
    by_id = _by_id(run)
    assert by_id["B2"]["design"] == ["B2", "8.5.4"]
    assert (by_id["B2"]["target"], by_id["B2"]["world"], by_id["B2"]["seed"]) == ("twin", "stub-workers", "7")
    assert by_id["B2"]["fingerprint"] == {"twin": "0.1.0"}
    assert by_id["C3"]["world"] == "leaky-world"  # a scenario's own facts override the run's
    assert all(step["duration_s"] >= 0 for record in run["scenarios"] for step in record["steps"])


def test_xdist_records_come_from_the_workers(sample_runs: dict[str, Path]) -> None:
    document = results.load(sample_runs["xdist-2-workers"] / "out" / "results.json")
    assert {record["worker"] for record in document["scenarios"]} == {"gw0", "gw1"}


def test_cucumber_json_is_strict_where_pytest_bdds_is_not(sample_runs: dict[str, Path]) -> None:
    ours = json.loads((sample_runs["single-process"] / "out" / "cucumber.json").read_text())
    theirs = json.loads((sample_runs["single-process"] / "bdd.json").read_text())
    elements = {el["name"]: el for feature in ours for el in feature["elements"]}
    assert len(elements) == 7
    assert [s["result"]["status"] for s in elements["Planner flips a cap"]["steps"]] == ["passed", "undefined", "skipped"]
    assert [s["result"]["status"] for s in elements["Hostengine flaps"]["steps"]] == ["skipped", "skipped"]
    assert elements["Broken world"]["before"][0]["result"]["status"] == "failed"
    assert elements["Leaky world"]["after"][0]["result"]["error_message"].endswith("could not delete the namespace")
    # The gaps we close, as pytest-bdd 9.0.1 shows them: a scenario skipped before it starts is dropped, an
    # undefined step vanishes (its scenario looks passed), a step that called pytest.skip() is "passed".
    their = {el["name"]: [s["result"]["status"] for s in el["steps"]] for feature in theirs for el in feature["elements"]}
    assert "Hostengine flaps" not in their
    assert their["Planner flips a cap"] == ["passed"]
    assert their["Hostengine restarts"] == ["passed", "passed"]
    assert [s["result"]["status"] for s in elements["Hostengine restarts"]["steps"]] == ["passed", "skipped"]


@pytest.mark.parametrize("mode", list(SAMPLE_MODES))
def test_junit_xml_maps_outcomes_strictly(sample_runs: dict[str, Path], mode: str) -> None:
    root = ET.parse(sample_runs[mode] / "out" / "junit.xml").getroot()
    suites = root.findall("testsuite")  # one per feature file and world: "Leaky world" runs in its own world
    assert [(s.get("file"), s.find("properties/property[@name='world']").get("value")) for s in suites] == [
        ("power.feature", "stub-workers"), ("power.feature", "leaky-world")]
    totals = [sum(int(s.get(kind)) for s in suites) for kind in ("tests", "failures", "errors", "skipped")]
    assert totals == [7, 2, 2, 2] and (root.get("tests"), root.get("failures"), root.get("errors")) == ("7", "2", "2")
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert cases["Planner flips a cap"].find("failure").get("type") == "undefined"
    assert cases["Hostengine flaps"].find("skipped").get("message") == "needs DCGM: no hostengine on this target"
    assert "When the agent reconciles ... passed" in cases["Caps land on every GPU"].find("system-out").text
    assert cases["Caps land on every GPU"].find("failure") is None


@pytest.mark.parametrize("mode", list(SAMPLE_MODES))
def test_records_never_leak_into_pytests_own_junit(sample_runs: dict[str, Path], mode: str) -> None:
    assert "stepgraph.scenario-record" not in (sample_runs[mode] / "out" / "pytest-junit.xml").read_text()


def test_plugin_is_inert_without_an_output_option(sample_project: pytest.Pytester) -> None:
    outcome = run_sample(sample_project, "--junitxml=pytest-junit.xml")
    outcome.assert_outcomes(passed=2, failed=2, skipped=2, errors=2)
    assert sorted(p.name for p in sample_project.path.iterdir() if p.suffix in {".json", ".xml"}) == ["pytest-junit.xml"]
    # Inert means no property of ours in pytest's own XML; the word itself may well be in a
    # traceback's path (a checkout called stepgraph).
    junit = ET.parse(sample_project.path / "pytest-junit.xml").getroot()
    assert [p.get("name") for p in junit.iter("property") if p.get("name", "").startswith("stepgraph")] == []


def test_each_example_of_an_outline_is_its_own_scenario(pytester: pytest.Pytester) -> None:
    pytester.makefile(".feature", caps="""\
Feature: Caps
  @id:B2 @design:B2
  Scenario Outline: A worker gets its cap
    Given a worker annotated <watts>
    Then its GPU is capped at <watts>

    Examples:
      | watts |
      | 350   |
      | 200   |
""")
    pytester.makepyfile(test_caps="""\
from pytest_bdd import given, then, parsers, scenarios

scenarios("caps.feature")


@given(parsers.parse("a worker annotated {watts:d}"), target_fixture="watts")
def worker(watts):
    return watts


@then(parsers.parse("its GPU is capped at {cap:d}"))
def capped(watts, cap):
    assert watts >= 280, "below the safe default"
""")
    run_sample(pytester, "--stepgraph-results", "results.json")
    document = results.load(pytester.path / "results.json")
    assert [(r["id"], r["outcome"]) for r in document["scenarios"]] == [("B2[200]", "failed"), ("B2[350]", "passed")]
    assert document["scenarios"][1]["steps"][0]["name"] == "a worker annotated 350"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["single-process", "xdist-2-workers"])
def test_a_feature_that_does_not_parse_is_reported_not_lost(sample_project: pytest.Pytester, tmp_path: Path,
                                                            workers: list[str]) -> None:
    sample_project.makefile(".feature", broken="Feature: Broken\n  Scenario: x\n    Given y\n    | a | b |\n    | 1 |\n")
    sample_project.makepyfile(test_broken='from pytest_bdd import scenarios\nscenarios("broken.feature")\n')
    run_sample(sample_project, "--stepgraph-results", "results.json", "--continue-on-collection-errors", *workers)
    document = results.load(sample_project.path / "results.json")
    (error,) = document["run"]["collection_errors"]
    assert error["nodeid"] == "test_broken.py"
    assert "(5:5): inconsistent cell count within the table" in error["message"]
    assert document["summary"]["total"] == 7  # the other feature still ran and was recorded
    doc = tmp_path / "plan.md"
    doc.write_text("# P\n\n| ID | What |\n|---|---|\n" + "".join(f"| {sid} | x |\n" for sid in SAMPLE_EXPECTED))
    assert main(["--design", str(doc), "--results", str(sample_project.path / "results.json"), "--out", str(tmp_path / "o"),
                 "--format", "md", "--allow-orphans"]) == 0
    assert "**Collection errors**" in (tmp_path / "o" / "trace.md").read_text()


def test_dsl_yaml_scenarios_point_at_the_yaml_and_carry_the_target(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\nstepgraph_paths = ["scenarios"]\n')
    pytester.mkdir("scenarios")
    (pytester.path / "scenarios" / "wait.yaml").write_text(
        "id: W1\ntitle: Waiting on the target clock\ndesign: [C1]\nsteps:\n"
        "  - note_time: {as: t0}\n  - bind: {value: busy, as: state}\n  - wait: {duration: 1 tick}\n"
        "  - value_is: {name: $state, value: ready}\n")
    (pytester.path / "scenarios" / "dcgm.yaml").write_text(
        "id: W2\ntitle: Needs DCGM\ndesign: [B7]\nneeds: [dcgm]\nsteps:\n  - note_time: {as: t0}\n")
    run_sample(pytester, "--stepgraph-results=results.json", "--target", "local")  # whatever targets are installed
    gated, record = results.load(pytester.path / "results.json")["scenarios"]
    assert (gated["id"], gated["outcome"], gated["reason"]) == ("W2", "skipped", "target 'local' lacks dcgm")
    assert (record["id"], record["design"], record["feature"]["file"]) == ("W1", ["C1"], "scenarios/wait.yaml")
    assert [step["line"] for step in record["steps"]] == [5, 6, 7, 8]
    assert [step["status"] for step in record["steps"]] == ["passed", "passed", "passed", "failed"]
    assert record["target"] == "local"  # from the DSL's target session, with no record_environment call


def test_stepgraph_reports_writes_every_report_and_diffs_against_the_previous_run(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nstepgraph_trace_design = plan.md\nstepgraph_trace_expect = expect.yaml\n")
    (pytester.path / "plan.md").write_text("# Plan\n\n| ID | What |\n|---|---|\n| B1 | pods are listed |\n")
    (pytester.path / "expect.yaml").write_text("- name: all pass\n  expect: {passed: 1}\n")
    pytester.makefile(".feature", pods="Feature: Pods\n  @id:B1 @design:B1\n  Scenario: Pods are listed\n    Given pods\n")
    pytester.makepyfile(test_pods="""\
import os
from pytest_bdd import given, scenarios

scenarios("pods.feature")


@given("pods")
def pods():
    assert os.environ.get("BREAK_IT") != "1", "no pods listed"
""")
    first = run_sample(pytester, "--stepgraph-reports=reports")
    assert first.ret == pytest.ExitCode.OK
    first.stdout.fnmatch_lines(["stepgraph trace: 1/1 requirements covered (100.0%), 1 passing, 0 suspect → reports"])
    reports = pytester.path / "reports"
    assert sorted(p.name for p in reports.iterdir()) == [
        "cucumber.json", "junit.xml", "results.json", "trace.html", "trace.json", "trace.md"]
    monkeypatch.setenv("BREAK_IT", "1")
    second = run_sample(pytester, "--stepgraph-reports=reports", "-n", "2")
    assert second.ret == pytest.ExitCode.TESTS_FAILED
    second.stdout.fnmatch_lines(["*expectation 'all pass' not met: expected {'passed': 1}, got {'passed': 0}"])
    assert (reports / "previous" / "results.json").is_file()
    assert "🔴 new failure `B1` (- / -): passed → failed" in (reports / "trace.md").read_text()
    monkeypatch.delenv("BREAK_IT")
    (pytester.path / "expect.yaml").write_text("- name: two pass\n  expect: {passed: 2}\n")
    green_but_unexpected = run_sample(pytester, "--stepgraph-reports=reports")
    green_but_unexpected.assert_outcomes(passed=1)
    assert green_but_unexpected.ret == pytest.ExitCode.TESTS_FAILED  # the declared expectation fails the run


def test_stepgraph_reports_falls_back_to_the_dsls_design_doc_or_skips_the_trace(pytester: pytest.Pytester) -> None:
    (pytester.path / "plan.md").write_text("# Plan\n\n| ID | What |\n|---|---|\n| B1 | pods are listed |\n")
    pytester.makefile(".feature", pods="Feature: Pods\n  @id:B1 @design:B1\n  Scenario: Pods are listed\n    Given pods\n")
    pytester.makepyfile(test_pods='from pytest_bdd import given, scenarios\nscenarios("pods.feature")\n\n'
                                  '@given("pods")\ndef pods():\n    pass\n')
    no_doc = run_sample(pytester, "--stepgraph-reports=reports")
    no_doc.stdout.fnmatch_lines(["stepgraph trace: skipped — no design document*"])
    assert not (pytester.path / "reports" / "trace.md").exists()
    pytester.makeini("[pytest]\nstepgraph_design_doc = plan.md\n")
    with_doc = run_sample(pytester, "--stepgraph-reports=reports")
    with_doc.stdout.fnmatch_lines(["stepgraph trace: 1/1 requirements covered (100.0%)*"])
    assert with_doc.ret == pytest.ExitCode.OK


def test_an_unwritable_report_path_is_a_usage_error_before_any_test_runs(sample_project: pytest.Pytester) -> None:
    (sample_project.path / "taken").write_text("")
    outcome = run_sample(sample_project, "--stepgraph-results=taken/results.json")
    assert outcome.ret == pytest.ExitCode.USAGE_ERROR
    outcome.stderr.fnmatch_lines(["ERROR: taken/results.json: cannot write the report: taken is not a folder — choose a writable path"])
    assert "passed" not in outcome.stdout.str()
