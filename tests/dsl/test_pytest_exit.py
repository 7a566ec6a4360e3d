"""pytest.exit during a scenario is not an interrupt, although pytest reports it through the same
hook: the run says what ended it, and its cleanup still runs to the end and reports what failed."""

from __future__ import annotations

import pytest

LIBRARY = '''
import pytest
from stepgraph.dsl import REGISTRY, Params, StepContext


class Name(Params):
    name: str


def broken_undo(ctx: StepContext, p: Name, result: object) -> None:
    raise RuntimeError(f"cannot undo {p.name}")


@REGISTRY.when("rec.create_stuck", "a stuck resource {name} is created", key="create_stuck",
               effects={"creates-objects"}, compensation=broken_undo)
def create_stuck(ctx: StepContext, p: Name) -> None:
    pass


@REGISTRY.when("rec.exit", "the run is ended with pytest.exit", key="exit")
def end(ctx: StepContext, p: Params) -> None:
    pytest.exit("enough for today", returncode=3)
'''

FEATURE = """\
Feature: Ended
  Scenario: pytest.exit in the middle
    When a stuck resource "a" is created
    And the run is ended with pytest.exit
"""


def test_a_run_ended_by_pytest_exit_is_not_reported_as_interrupted(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nstepgraph_paths = scenarios\n")
    pytester.makeconftest(LIBRARY)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "ended.feature").write_text(FEATURE)
    result = pytester.runpytest_subprocess("--target", "local", "-p", "no:cacheprovider")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 3, output  # pytest.exit's own code, not "interrupted"
    assert "stepgraph: compensations failed after pytest.exit: " in output
    assert "RuntimeError: cannot undo a" in output
    assert "after the interrupt" not in output
    assert result.stdout.str().rstrip().endswith("stepgraph cleanup: undone: nothing to undo; 1 compensation(s) FAILED")


RENDERED = '''
import pytest

ENTRIES = []


@pytest.hookimpl(trylast=True)
def pytest_keyboard_interrupt(excinfo):
    ENTRIES.append(len(excinfo.traceback))  # what the terminal reporter renders before it prints the message


def pytest_unconfigure(config):
    print(f"traceback entries rendered: {ENTRIES}")
'''


def test_an_exit_renders_only_the_traceback_entry_its_message_comes_from(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nstepgraph_paths = scenarios\n")
    pytester.makeconftest(LIBRARY + RENDERED)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "ended.feature").write_text(FEATURE.replace("    And the run is ended with pytest.exit\n", ""))
    result = pytester.runpytest_inprocess("--target", "local", "--target-option", "tick_second=5", "-s")
    assert result.ret == 2
    result.stdout.fnmatch_lines(["*! _pytest.outcomes.Exit: stepgraph: --target-option tick_second=5: target 'local' "
                                 "has no option 'tick_second'*"])
    # The line that called pytest.exit, and pytest.exit's own (hidden) entry: not the 30-odd of pytest above them.
    assert "traceback entries rendered: [2]" in result.stdout.str()


INTERRUPTED_BEFORE_ANY_SCENARIO = '''
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    raise KeyboardInterrupt  # Ctrl-C between collection and the first scenario's start
'''


def test_a_run_interrupted_before_its_first_scenario_says_there_was_nothing_to_undo(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nstepgraph_paths = scenarios\n")
    pytester.makeconftest(LIBRARY + INTERRUPTED_BEFORE_ANY_SCENARIO)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "ended.feature").write_text(FEATURE)
    result = pytester.runpytest_subprocess("--target", "local", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert result.stdout.str().rstrip().endswith("stepgraph cleanup: undone: nothing to undo"), result.stdout.str()
