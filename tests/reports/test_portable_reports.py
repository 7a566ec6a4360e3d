"""Every path in every report is named from the rootdir, whatever folder the run starts in, so the
files read the same when they are attached to a CI run or opened on another machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FEATURE = """\
Feature: Lists
  @id:P1 @design:P1
  Scenario: A bound list matches another in any order
    Given the list "gpu-0, gpu-1" is bound as "assigned"
    And the list "gpu-1, gpu-0" is bound as "expected"
    Then "assigned" has the same elements as "expected"
"""
YAML = """\
id: P2
title: A YAML scenario waits on the target clock
design: [P2]
steps:
  - note_time: {as: t0}
  - wait: {duration: 1 tick}
  - elapsed: {duration: 10 s, since: $t0}
"""
PLAN = "# Plan\n\n| ID | What |\n|---|---|\n| P1 | lists |\n| P2 | waiting |\n"
EXPECTED = "- name: every scenario\n  files: [scenarios/*]\n  expect: {passed: 2}\n"
# A target's fact that names a folder by its absolute path, as a manifests option given that way does.
CONFTEST = """\
from stepgraph.dsl.reports.environment import record_environment


def pytest_configure(config):
    record_environment(config, fingerprint={"manifests": str(config.rootpath / "manifests")})
"""


@pytest.fixture(scope="module")
def run_from_a_subfolder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The project run from its scenarios/ folder, naming the scenarios and the reports folder by
    absolute paths: the rootdir is the project, and nothing in a report may name where it is."""
    project = tmp_path_factory.mktemp("project")
    (project / "scenarios").mkdir()
    (project / "scenarios" / "lists.feature").write_text(FEATURE)
    (project / "scenarios" / "waiting.yaml").write_text(YAML)
    (project / "docs").mkdir()
    (project / "docs" / "plan.md").write_text(PLAN)
    (project / "docs" / "expected.yaml").write_text(EXPECTED)
    (project / "manifests").mkdir()
    (project / "conftest.py").write_text(CONFTEST)
    (project / "pytest.ini").write_text(
        "[pytest]\nstepgraph_paths = scenarios\nstepgraph_design_doc = docs/plan.md\n"
        "stepgraph_trace_lock = docs/review.lock.json\n"
    )
    out = project / "out"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--target", "local", f"--stepgraph-reports={out}", str(project / "scenarios"),
         "-o", f"stepgraph_trace_expect={project / 'docs' / 'expected.yaml'}", "-p", "no:cacheprovider"],
        cwd=project / "scenarios", capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return project, out


def test_no_report_names_the_project_folder(run_from_a_subfolder: tuple[Path, Path]) -> None:
    project, out = run_from_a_subfolder
    written = sorted(p for p in out.rglob("*") if p.is_file())
    assert {p.name for p in written} >= {"results.json", "cucumber.json", "junit.xml", "trace.json", "trace.md", "trace.html"}
    # The folder's own path, precisely: a bare word such as the project's name may appear anywhere.
    folders = {str(project), str(project.resolve())}
    named = [(p.name, line) for p in written for line in p.read_text().splitlines() if any(f in line for f in folders)]
    assert named == []


def test_scenario_files_are_named_from_the_rootdir(run_from_a_subfolder: tuple[Path, Path]) -> None:
    _, out = run_from_a_subfolder
    document = json.loads((out / "results.json").read_text())
    assert sorted(r["feature"]["file"] for r in document["scenarios"]) == ["scenarios/lists.feature", "scenarios/waiting.yaml"]
    yaml = next(r for r in document["scenarios"] if r["id"] == "P2")
    assert "source:scenarios/waiting.yaml:2" in yaml["tags"]
    assert {r["fingerprint"]["manifests"] for r in document["scenarios"]} == {"manifests"}
    # the command line as typed, with the files and folders it names named from the rootdir
    assert document["run"]["args"] == ["--target", "local", "--stepgraph-reports=out", "scenarios",
                                       "-o", "stepgraph_trace_expect=docs/expected.yaml", "-p", "no:cacheprovider"]
    cucumber = json.loads((out / "cucumber.json").read_text())
    assert sorted(f["uri"] for f in cucumber) == ["scenarios/lists.feature", "scenarios/waiting.yaml"]


def test_the_trace_names_its_inputs_from_the_rootdir(run_from_a_subfolder: tuple[Path, Path]) -> None:
    _, out = run_from_a_subfolder
    trace = json.loads((out / "trace.json").read_text())
    assert [doc["path"] for doc in trace["documents"]] == ["docs/plan.md"]
    (expectation,) = trace["expectations"]
    # its glob over scenario files selects the same scenarios as from the rootdir
    assert (expectation["where"], expectation["ran"], expectation["ok"]) == ("docs/expected.yaml:1", True, True)
    links = [link["where"] for doc in trace["documents"] for row in doc["requirements"] for link in row["links"]]
    # where each scenario is written (a YAML one: in its YAML file, not in the Gherkin it runs as)
    assert sorted(links) == ["scenarios/lists.feature:3", "scenarios/waiting.yaml:2"]
