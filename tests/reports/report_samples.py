"""The reports tests' sample project: a feature with every outcome, its steps, and how to run it.

A module of its own (not conftest) so test files import it by a name no other folder uses.
"""

from __future__ import annotations

import pytest

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


def run_sample(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The sample's pytest run, in this process (from a fresh process's state: tests/conftest.py).
    A pytest-xdist run gets a process of its own: its controller's execnet gateways and worker
    bookkeeping are state that the in-process runs do not reset."""
    if "-n" in args:
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)
