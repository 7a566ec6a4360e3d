"""Shared helpers for the reports tests: sample features, pytester runs, the real design document."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # `pytest_plugins` is only allowed in the root conftest; load pytester for these black-box runs.
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")

REPO_ROOT = Path(__file__).resolve().parents[2]
# Reference data lives in `shared/`, a sibling of the repo root (of a worktree's parent folders too).
_SHARED = next((p / "shared" for p in REPO_ROOT.parents if (p / "shared" / "reference").is_dir()), REPO_ROOT.parent / "shared")
EXTERNAL_DOC = _SHARED / "reference" / "external" / "dynamo-multi-tenant-test.md"
OUR_PLAN = REPO_ROOT / "docs" / "design" / "multi-tenant-test-plan.md"

# Until the DSL core lands, its declared pytest11 entry point has no module; keep it from breaking runs.
NO_MISSING_PLUGINS = [] if importlib.util.find_spec("stepgraph.dsl.plugin") else ["-p", "no:stepgraph"]

SAMPLE_FEATURE = """\
@power
Feature: Power caps on a shared node

  @id:B2 @design:B2,8.5.4
  Scenario: Caps land on every GPU
    Given a node with 8 GPUs
    When the agent reconciles
    Then every GPU carries its cap

  @id:B4 @design:B4
  Scenario: Counters stay at zero
    Given a node with 8 GPUs
    Then the counter is 1

  @id:C1 @design:C1
  Scenario: Planner flips a cap
    Given a node with 8 GPUs
    When the planner flips a cap to 460 W
    Then every GPU carries its cap

  @id:B7 @design:B7 @needs:dcgm
  Scenario: Hostengine flaps
    Given a node with 8 GPUs
    When the agent reconciles

  @id:E3 @design:E3
  Scenario: Hostengine restarts
    Given a node with 8 GPUs
    When the hostengine is not there

  @id:C2 @design:C2
  Scenario: Broken world
    Given a broken world

  @id:C3 @design:C3
  Scenario: Leaky world
    Given a leaky world
"""

SAMPLE_STEPS = """\
import pytest
from pytest_bdd import given, when, then, scenarios

scenarios("power.feature")


@pytest.fixture
def leaky():
    yield "ok"
    raise RuntimeError("could not delete the namespace")


@given("a node with 8 GPUs")
def node():
    return 8


@when("the agent reconciles")
def reconcile():
    pass


@then("every GPU carries its cap")
def caps():
    pass


@then("the counter is 1")
def counter():
    assert 0 == 1, "safe_default_applied_total is 0"


@when("the hostengine is not there")
def no_hostengine():
    pytest.skip("DCGM hostengine not deployed")


@given("a broken world")
def broken_world():
    pass


@given("a leaky world")
def leaky_world(leaky):
    pass
"""

SAMPLE_CONFTEST = """\
import pytest
from stepgraph.dsl.reports.environment import record_environment, record_scenario_facts


def pytest_configure(config):
    record_environment(config, target="twin", world="stub-workers", seed=7, fingerprint={"twin": "0.1.0"})


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("needs:dcgm"):
            item.add_marker(pytest.mark.skip(reason="needs DCGM: no hostengine on this target"))


@pytest.fixture(autouse=True)
def _world(request):
    if "leaky" in request.node.name:
        record_scenario_facts(request.node, world="leaky-world")
    if "broken" in request.node.name:
        raise RuntimeError("the twin did not start")
"""

SAMPLE_EXPECTED = {  # scenario id → outcome the sample must produce
    "B2": "passed", "B4": "failed", "C1": "undefined", "B7": "skipped", "E3": "skipped", "C2": "error", "C3": "error",
}


OUTPUTS = ("--stepgraph-results=out/results.json", "--stepgraph-cucumber=out/cucumber.json",
           "--stepgraph-junit=out/junit.xml", "--junitxml=out/pytest-junit.xml")
SAMPLE_MODES = {"single-process": ["--cucumberjson=bdd.json"], "xdist-2-workers": ["-n", "2"]}


@pytest.fixture(scope="session")
def sample_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sample feature run once per mode (it is the slow part); tests read the files it wrote."""
    runs = {}
    for mode, extra in SAMPLE_MODES.items():
        folder = tmp_path_factory.mktemp(mode)
        (folder / "power.feature").write_text(SAMPLE_FEATURE)
        (folder / "test_power.py").write_text(SAMPLE_STEPS)
        (folder / "conftest.py").write_text(SAMPLE_CONFTEST)
        done = subprocess.run([sys.executable, "-m", "pytest", *NO_MISSING_PLUGINS, "-p", "no:cacheprovider", *OUTPUTS, *extra],
                              cwd=folder, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
        runs[mode] = folder
    return runs


@pytest.fixture
def sample_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".feature", power=SAMPLE_FEATURE)
    pytester.makepyfile(test_power=SAMPLE_STEPS)
    pytester.makeconftest(SAMPLE_CONFTEST)
    return pytester


def run_sample(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*NO_MISSING_PLUGINS, "-p", "no:cacheprovider", *args)
