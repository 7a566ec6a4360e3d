"""One broken scenario file next to good ones, in a run with reports and a trace: the run stops
with the file's `file:line:col` line and exit 2 (never a plugin crash), and pytest's own
`--continue-on-collection-errors` runs the rest."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
BROKEN = "Feature: broken\n  Scenario: S\n    Given an undefined step here\n"
MESSAGE = (
    "scenarios/zz_broken.feature:3:5: undefined step: 'an undefined step here' — run `stepgraph steps` to list the steps,"
    " or declare a new one (docs/design/authoring-steps.md)"
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(ROOT / "scenarios" / "demo", pytester.path / "scenarios")
    shutil.copy(ROOT / "docs" / "design" / "multi-tenant-test-plan.md", pytester.path / "plan.md")
    (pytester.path / "scenarios" / "zz_broken.feature").write_text(BROKEN)
    pytester.makeini("[pytest]\nstepgraph_paths = scenarios\nstepgraph_trace_design = plan.md\n")
    return pytester


def test_a_broken_file_stops_the_run_with_its_message_and_exit_2(project: pytest.Pytester) -> None:
    result = project.runpytest_inprocess("--target", "local", "--stepgraph-reports", "reports", "-p", "no:cacheprovider")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 2, output
    assert MESSAGE in output and "Traceback" not in output
    assert (project.path / "reports" / "trace.html").is_file()


def test_the_rest_runs_with_continue_on_collection_errors(project: pytest.Pytester) -> None:
    result = project.runpytest_inprocess(
        "--target", "local", "--stepgraph-reports", "reports", "--continue-on-collection-errors", "-p", "no:cacheprovider"
    )
    output = result.stdout.str()
    assert MESSAGE in output and "Traceback" not in output + result.stderr.str()
    result.assert_outcomes(passed=3, errors=1)
