"""End to end through pytest and pytest-bdd (pytester; runs in this process, each from the state
a fresh process has, except the Ctrl-C run, which gets a process of its own as a user's would): the
gherkin reporter shows both syntaxes step by step; needs are gated before setup; finalizers always
run; target errors exit 2; the plugin stays inert without scenario paths."""

from __future__ import annotations

import sys
import textwrap

import pytest

INI = """
[pytest]
stepgraph_paths = scenarios
"""

LIBRARY = '''
"""A recording step library and target for the integration tests."""
from __future__ import annotations

import os
from pathlib import Path

from stepgraph.dsl import REGISTRY, CheckFailed, LocalTarget, Params, StepContext, TargetConfigError

LOG = Path(os.environ["REC_LOG"])


def log(line: str) -> None:
    with LOG.open("a") as f:
        f.write(line + "\\n")


class Name(Params):
    name: str


def undo(ctx: StepContext, p: Name, result: object) -> None:
    log(f"undo {p.name}")


def broken_undo(ctx: StepContext, p: Name, result: object) -> None:
    raise RuntimeError(f"cannot undo {p.name}")


@REGISTRY.when("rec.create", "a resource {name} is created", key="create", effects={"creates-objects"}, compensation=undo)
def create(ctx: StepContext, p: Name) -> None:
    log(f"do {p.name}")


@REGISTRY.when("rec.create_stuck", "a stuck resource {name} is created", key="create_stuck", effects={"creates-objects"},
               compensation=broken_undo)
def create_stuck(ctx: StepContext, p: Name) -> None:
    log(f"do {p.name}")


@REGISTRY.when("rec.interrupt", "the operator presses ctrl-c", key="interrupt")
def interrupt(ctx: StepContext, p: Params) -> None:
    raise KeyboardInterrupt


@REGISTRY.then("rec.fails", "the check {name} fails", key="fails")
def fails(ctx: StepContext, p: Name) -> None:
    raise CheckFailed(f"{p.name} does not hold", expected="green", observed="red")


@REGISTRY.when("rec.gpu", "the GPU is touched", key="gpu", needs={"nvml"})
def gpu(ctx: StepContext, p: Params) -> None:
    log("gpu touched")


COUNTER = {"n": 0}


@REGISTRY.when("rec.bump", "the shared counter is bumped", key="bump", effects={"increments-shared-counter"})
def bump(ctx: StepContext, p: Params) -> None:
    COUNTER["n"] += 1


class Count(Params):
    count: int


@REGISTRY.then("rec.counter_is", "the shared counter is {count:int}", key="counter_is", absolute={"shared-counter"})
def counter_is(ctx: StepContext, p: Count) -> None:
    log("absolute check ran")
    if COUNTER["n"] != p.count:
        raise CheckFailed("counter", expected=p.count, observed=COUNTER["n"])


class RecordingTarget(LocalTarget):
    name = "recording"

    def start(self, options):
        log("target started")
        session = super().start(options)
        session.facts["driver"] = "none"
        return session


class ConfigurableTarget(LocalTarget):
    name = "configurable"
    options = {"caps": "capabilities, comma-separated"}

    def configure(self, options):
        self.capabilities = frozenset(filter(None, options.get("caps", "").split(",")))
        log(f"configured {sorted(self.capabilities)}")


class BrokenTarget(LocalTarget):
    name = "broken"

    def start(self, options):
        raise TargetConfigError("TEST_NODE is not set — export TEST_NODE=<node name>")
'''

CONFTEST = """
import json
import os

import reclib  # noqa: F401  (registers the recording steps)
from stepgraph.dsl.runinfo import run_info


def pytest_itemcollected(item):
    with open(os.environ["REC_LOG"], "a") as f:
        f.write(f"item {item.location[0]}:{item.location[1] + 1}\\n")


def pytest_bdd_after_step(request, feature, scenario, step, step_func, step_func_args):
    info = run_info(request.config)
    where = info.scenario(feature.filename, scenario.name).location_of(step.line_number)
    with open(os.environ["REC_LOG"], "a") as f:
        f.write(f"at {where} facts={json.dumps(info.facts, sort_keys=True)}\\n")
"""

FEATURE = """\
Feature: Sample Gherkin
  Background:
    Given the time is noted as "t0"

  @id:S1
  Scenario: Gherkin waits within ticks
    When we wait 1 agent tick
    Then within 1 agent tick at least 20 s passed since "t0"
"""

YAML = """\
id: S2
title: Sample YAML
steps:
  - bind: {value: ok, as: state}
  - expect:
      within: 5 s
      all:
        - value_is: {name: $state, value: ok}
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeini(INI)
    pytester.makepyfile(reclib=LIBRARY, conftest=CONFTEST)
    (pytester.path / "scenarios").mkdir()
    monkeypatch.setenv("REC_LOG", str(pytester.path / "rec.log"))
    (pytester.path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(pytester.path / "tmp"))  # checked by left_behind()
    (pytester.path / "rec.log").write_text("")
    return pytester


def scenario(pytester: pytest.Pytester, name: str, text: str) -> None:
    (pytester.path / "scenarios" / name).write_text(textwrap.dedent(text))


def log(pytester: pytest.Pytester) -> list[str]:
    return [line for line in (pytester.path / "rec.log").read_text().splitlines() if not line.startswith("item ")]


def left_behind(pytester: pytest.Pytester) -> list[str]:
    return sorted(p.name for p in (pytester.path / "tmp").iterdir())  # no temporary file or folder outlives a run


def item_locations(pytester: pytest.Pytester) -> list[str]:
    return [line for line in (pytester.path / "rec.log").read_text().splitlines() if line.startswith("item ")]


def test_gherkin_reporter_shows_both_syntaxes_step_by_step(project: pytest.Pytester) -> None:
    scenario(project, "sample.feature", FEATURE)
    scenario(project, "sample.yaml", YAML)
    result = project.runpytest_inprocess("--gherkin-terminal-reporter", "-vv", "--strict-markers", "--target", "reclib:RecordingTarget")
    result.stdout.fnmatch_lines(
        [
            "Feature: Sample Gherkin",
            "    Scenario: Gherkin waits within ticks",
            '        Given the time is noted as "t0"',
            "        When we wait 1 agent tick",
            '        Then within 1 agent tick at least 20 s passed since "t0"',
            "    PASSED",
            "Feature: Sample YAML",
            "    Scenario: Sample YAML",
            '        Given the value "ok" is bound as "state"',
            '        Then within 5 s "state" is "ok"',
            "    PASSED",
            "*2 passed*",
        ]
    )
    assert result.ret == 0
    assert "pytest_bdd" not in result.stdout.str()  # locations point at the scenario files, not pytest-bdd's wrapper
    assert item_locations(project) == ["item scenarios/sample.feature:6", "item scenarios/sample.yaml:2"]
    facts = 'facts={"driver": "none", "target": "local", "tick_seconds": 15.0}'
    assert log(project) == [
        "target started",
        f"at scenarios/sample.feature:3:5 {facts}",
        f"at scenarios/sample.feature:7:5 {facts}",
        f"at scenarios/sample.feature:8:5 {facts}",
        f"at scenarios/sample.yaml:4:5 {facts}",  # YAML steps map back to their YAML lines
        f"at scenarios/sample.yaml:8:11 {facts}",
    ]


def test_markers_select_by_id_under_strict_markers(project: pytest.Pytester) -> None:
    scenario(project, "sample.feature", FEATURE)
    scenario(project, "sample.yaml", YAML)
    result = project.runpytest_inprocess("--strict-markers", "-m", "id:S2", "-q")
    result.assert_outcomes(passed=1, deselected=1)


def test_unmet_needs_skip_before_any_setup(project: pytest.Pytester) -> None:
    scenario(
        project,
        "gpu.feature",
        """\
        Feature: Needs a GPU
          @needs:dcgm
          Scenario: Declared need
            When a resource "r1" is created
          Scenario: Need from a step
            When a resource "r2" is created
            And the GPU is touched
        """,
    )
    result = project.runpytest_inprocess("-rs", "--target", "reclib:RecordingTarget")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*target 'recording' lacks dcgm*", "*target 'recording' lacks nvml*"])
    assert log(project) == []  # not even the target session started


def test_finalizers_run_lifo_after_a_failure_and_report_their_own_failures(project: pytest.Pytester) -> None:
    scenario(
        project,
        "undo.feature",
        """\
        Feature: Compensation
          Scenario: A failing check still undoes everything
            When a resource "a" is created
            And a resource "b" is created
            Then the check "green" fails
          Scenario: A failing compensation is reported and the others still run
            When a resource "c" is created
            And a stuck resource "d" is created
        """,
    )
    result = project.runpytest_inprocess("--target", "reclib:RecordingTarget")
    result.assert_outcomes(failed=1, passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*1 finalizer(s) failed:*",
            "*compensate rec.create_stuck (scenarios/undo.feature:8:5): RuntimeError: cannot undo d*",
            "*green does not hold*",
            "*expected: green*",
            "*observed: red*",
        ]
    )
    assert [line for line in log(project) if not line.startswith("at ")] == [
        "target started",
        "do a",
        "do b",
        "undo b",
        "undo a",
        "do c",
        "do d",
        "undo c",
    ]


def test_finalizers_run_on_ctrl_c(project: pytest.Pytester) -> None:
    scenario(
        project,
        "interrupt.feature",
        """\
        Feature: Interrupted
          Scenario: Ctrl-C in the middle
            When a resource "a" is created
            And the operator presses ctrl-c
        """,
    )
    scenario(project, "sample.yaml", YAML)  # collected, so its generated feature exists when Ctrl-C comes
    result = project.runpytest_subprocess("--target", "reclib:RecordingTarget")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert [line for line in log(project) if not line.startswith("at ")] == ["target started", "do a", "undo a"]
    assert left_behind(project) == []


def test_a_misconfigured_target_exits_2_with_one_line(project: pytest.Pytester) -> None:
    scenario(project, "sample.yaml", YAML)
    result = project.runpytest_inprocess("--target", "reclib:BrokenTarget")
    assert result.ret == 2
    output = result.stdout.str() + result.stderr.str()
    assert "stepgraph: target 'broken': TEST_NODE is not set — export TEST_NODE=<node name>" in output
    assert "Traceback" not in output
    assert left_behind(project) == []  # the YAML scenario's generated feature is gone too


def test_an_unknown_target_exits_2(project: pytest.Pytester) -> None:
    scenario(project, "sample.yaml", YAML)
    result = project.runpytest_inprocess("--target", "nowhere")
    assert result.ret == 2
    output = result.stdout.str() + result.stderr.str()
    assert "stepgraph: unknown target 'nowhere' — choose one of: " in output and "local" in output


def test_a_broken_scenario_is_a_collection_error_without_traceback(project: pytest.Pytester) -> None:
    scenario(project, "bad.feature", 'Feature: Bad\n  Scenario: S\n    Given a unicorn\n    Then "x" equals "y"\n')
    result = project.runpytest_inprocess()
    assert result.ret == pytest.ExitCode.INTERRUPTED  # collection errors stop the run (exit code 2)
    result.stdout.fnmatch_lines(["scenarios/bad.feature:3:5: undefined step: 'a unicorn'*"])
    assert "Traceback" not in result.stdout.str()


def test_the_plugin_is_inert_without_scenario_paths(project: pytest.Pytester) -> None:
    scenario(project, "bad.feature", "Feature: Bad\n  Scenario: S\n    Given a unicorn\n")
    project.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = project.runpytest_inprocess("test_plain.py", "--target", "nowhere")
    result.assert_outcomes(passed=1)
    assert log(project) == []


def test_a_scenario_id_used_in_two_files_is_a_collection_error(project: pytest.Pytester) -> None:
    scenario(project, "a.yaml", YAML)
    scenario(project, "b.feature", "Feature: B\n  @id:S2\n  Scenario: Same id\n    When we wait 1 s\n")
    result = project.runpytest_inprocess()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["scenarios/b.feature:3:3: scenario id 'S2' is also used at scenarios/a.yaml:2:1 — *"])


def test_stepgraph_run_passes_paths_and_pytest_options(project: pytest.Pytester) -> None:
    scenario(project, "sample.yaml", YAML)
    project.makeconftest(CONFTEST)
    (project.path / "other").mkdir()
    (project.path / "other" / "x.feature").write_text(FEATURE)
    result = project.run(sys.executable, "-m", "stepgraph.dsl.cli", "run", "other", "--reports", "out", "--", "-vv", "-s")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["Feature: Sample Gherkin", "    Scenario: Gherkin waits within ticks", "*1 passed*"])
    assert "Sample YAML" not in result.stdout.str()
    # the command imports stepgraph.dsl before pytest starts: no warning that it cannot be rewritten
    assert "PytestAssertRewriteWarning" not in result.stdout.str()
    # --reports reaches the reports plugin: the run's records land in the folder it names
    assert sorted(p.name for p in (project.path / "out").iterdir()) == ["cucumber.json", "junit.xml", "results.json"]


def test_a_check_that_never_holds_fails_with_expected_and_last_observed(project: pytest.Pytester) -> None:
    scenario(
        project,
        "late.yaml",
        """\
        title: Too impatient
        steps:
          - note_time: {as: t0}
          - expect: {within: 1 tick, all: [{elapsed: {duration: 1 min, since: $t0}}]}
        """,
    )
    result = project.runpytest_inprocess("--gherkin-terminal-reporter", "-vv")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*common.elapsed within 1 agent tick: still failing after 15 s (16 attempts): not enough time passed",
            "*expected: ≥ 60 s",
            "*observed: 15 s",
        ]
    )


def test_design_ids_are_checked_against_the_configured_design_doc(project: pytest.Pytester) -> None:
    project.makeini(INI + "stepgraph_design_doc = plan.md\n")
    (project.path / "plan.md").write_text("# Plan\n## §8.5.7 Conflicts\n")
    scenario(project, "ok.feature", "Feature: A\n  @design:8.5.7\n  Scenario: Known\n    When we wait 1 s\n")
    scenario(project, "bad.feature", "Feature: B\n  @design:8.5.9\n  Scenario: Unknown\n    When we wait 1 s\n")
    result = project.runpytest_inprocess()
    result.stdout.fnmatch_lines(["scenarios/bad.feature:3:3: design id '8.5.9' is not in the design doc (plan.md) — did you mean '8.5.7'?"])
    (project.path / "plan.md").unlink()
    missing = project.runpytest_inprocess()
    assert missing.ret == 2
    assert "design doc 'plan.md' (ini stepgraph_design_doc) does not exist" in missing.stdout.str() + missing.stderr.str()


def test_a_target_configures_its_capabilities_from_options_before_gating(project: pytest.Pytester) -> None:
    scenario(project, "gpu.feature", "Feature: GPU\n  @needs:nvml\n  Scenario: Needs NVML\n    When we wait 1 s\n")
    with_nvml = project.runpytest_inprocess("--target", "reclib:ConfigurableTarget", "--target-option", "caps=nvml,k8s")
    with_nvml.assert_outcomes(passed=1)
    without = project.runpytest_inprocess("--target", "reclib:ConfigurableTarget", "--target-option", "caps=k8s", "-rs")
    without.assert_outcomes(skipped=1)
    assert [line for line in log(project) if line.startswith("configured")] == ["configured ['k8s', 'nvml']", "configured ['k8s']"]
    bad = project.runpytest_inprocess("--target", "reclib:ConfigurableTarget", "--target-option", "caps")
    assert bad.ret == 2
    assert "stepgraph: --target-option 'caps': write KEY=VALUE" in bad.stdout.str() + bad.stderr.str()


def test_a_scenario_outline_runs_each_row(project: pytest.Pytester) -> None:
    scenario(
        project,
        "outline.feature",
        """\
        Feature: Outline
          @id:O1
          Scenario Outline: Waiting <ticks>
            Given the time is noted as "t0"
            When we wait <ticks>
            Then at least <seconds> passed since "t0"

            @slow
            Examples:
              | ticks         | seconds |
              | 1 agent tick  | 15 s    |
              | 2 agent ticks | 31 s    |
        """,
    )
    result = project.runpytest_inprocess("--strict-markers", "-v", "-m", "id:O1 and slow")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_waiting_ticks[[]O1.1[]] PASSED*", "*test_waiting_ticks[[]O1.2[]] FAILED*"])
    result.stdout.fnmatch_lines(["*expected: ≥ 31 s*", "*observed: 30 s*"])
    lines = [line.split(" facts=")[0] for line in log(project) if line.startswith("at ")]
    assert lines == [f"at scenarios/outline.feature:{n}:5" for n in (4, 5, 6, 4, 5)]  # the failing step logs nothing


def test_an_absolute_check_after_an_incrementing_scenario_fails_before_its_steps(project: pytest.Pytester) -> None:
    scenario(project, "a_bump.feature", "Feature: Bump\n  Scenario: Bumps\n    When the shared counter is bumped\n")
    scenario(project, "b_fresh.feature", "Feature: Fresh\n  Scenario: Counts from zero\n    Then the shared counter is 0\n")
    result = project.runpytest_inprocess()
    result.assert_outcomes(passed=1, errors=1)  # an error at setup: not one step of it ran
    result.stdout.fnmatch_lines(
        [
            "*scenarios/b_fresh.feature:3:5: rec.counter_is asserts the absolute value of shared-counter, which an earlier scenario "
            "increments (scenarios/a_bump.feature:3:5) — compare against a baseline taken in this scenario, or run it first*"
        ]
    )
    assert "absolute check ran" not in log(project)
    alone = project.runpytest_inprocess("-k", "counts_from_zero")
    alone.assert_outcomes(passed=1, deselected=1)


def test_outline_rows_are_gated_by_their_own_needs(project: pytest.Pytester) -> None:
    scenario(
        project,
        "rows.feature",
        """\
        Feature: Rows
          Scenario Outline: Wait <d>
            When we wait <d>

            Examples:
              | d   |
              | 1 s |

            @needs:nvml
            Examples:
              | d   |
              | 2 s |
        """,
    )
    result = project.runpytest_inprocess("-rs", "--target", "reclib:RecordingTarget")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*target 'recording' lacks nvml*"])


def test_an_unknown_target_option_exits_2_listing_the_allowed_ones(project: pytest.Pytester) -> None:
    scenario(project, "sample.feature", FEATURE)
    result = project.runpytest_inprocess("--target", "local", "--target-option", "tick_second=5")
    assert result.ret == 2 and "Traceback" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(
        ["*stepgraph: --target-option tick_second=5: target 'local' has no option 'tick_second' — did you mean tick_seconds?"
         " its options: tick_seconds (seconds an agent tick lasts, e.g. 15)*"]
    )
    result = project.runpytest_inprocess("--target", "reclib:RecordingTarget", "--target-option", "caps=nvml")
    assert result.ret == 2
    result.stdout.fnmatch_lines(["*target 'recording' has no option 'caps' — its options: tick_seconds*"])
