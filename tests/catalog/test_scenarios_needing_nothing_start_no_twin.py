"""A scenario that needs none of the target's capabilities runs on the target's clock session: the
twin starts only for a scenario that will use it, and a step that reaches for the cluster from
such a scenario all the same is refused, not sent to whatever cluster the machine's default
kubeconfig names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RUN_THE_DEMO = """
import sys
import pytest
assert pytest.main(['-q', '-p', 'no:cacheprovider', 'scenarios/demo']) == 0
heavy = {'kubernetes', 'aiohttp', 'stepgraph.twin.cluster', 'stepgraph.twin.apiserver'}
print(sorted(heavy & ({m.split('.')[0] for m in sys.modules} | set(sys.modules))))
"""


def test_a_run_of_scenarios_needing_nothing_neither_starts_nor_imports_the_twin() -> None:
    done = subprocess.run([sys.executable, "-c", RUN_THE_DEMO], capture_output=True, text=True, check=False, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "[]", done.stdout
    # Nothing started that could leave something behind, so no check of the twin is claimed.
    assert lines[-2] == "stepgraph cleanup: undone: nothing to undo", done.stdout


LIBRARY = '''
from stepgraph.dsl import REGISTRY, Params, StepContext

SEEN = []


@REGISTRY.then("own.session_free", "the session is noted", key="note_session")
def note(ctx: StepContext, p: Params) -> None:
    SEEN.append((type(ctx.session).__name__, ctx.session.facts["world"], ctx.clock.now()))


@REGISTRY.then("own.session_k8s", "the cluster session is noted", key="note_cluster", needs=("k8s",))
def note_cluster(ctx: StepContext, p: Params) -> None:
    SEEN.append((type(ctx.session).__name__, ctx.session.facts["world"], bool(ctx.kubeconfig)))


@REGISTRY.then("own.undeclared", "the cluster is reached without saying so", key="undeclared")
def undeclared(ctx: StepContext, p: Params) -> None:
    SEEN.append(ctx.kubeconfig)


def pytest_unconfigure(config):
    print(f"seen: {SEEN}")
'''

FEATURE = """\
Feature: Both kinds
  Scenario: Needs nothing
    When we wait 1 agent tick
    Then the session is noted

  Scenario: Needs the cluster
    Then the cluster session is noted
"""


def _project(pytester: pytest.Pytester, feature: str) -> None:
    pytester.makeini("[pytest]\nstepgraph_paths = scenarios\n")
    pytester.makeconftest(LIBRARY)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "s.feature").write_text(feature)


def test_scenarios_needing_nothing_run_on_the_clock_session_beside_the_twin(pytester: pytest.Pytester) -> None:
    _project(pytester, FEATURE)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--target", "twin", "-s")
    output = result.stdout.str()
    assert result.ret == 0, output
    # The same world's facts on both; the clock session's clock is the world's (one agent tick, 15 s, passed on it).
    assert "seen: [('ClockSession', 'path-b', 15.0), ('Session', 'path-b', True)]" in output
    assert "checked by the twin target: nothing left behind" in output


def test_a_step_reaching_the_cluster_without_declaring_it_is_refused(pytester: pytest.Pytester) -> None:
    _project(pytester, "Feature: F\n  Scenario: Undeclared\n    Then the cluster is reached without saying so\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--target", "twin", "-s")
    output = result.stdout.str()
    assert result.ret == 1, output
    assert "the scenario needs none of the target's capabilities, so the target was not started for it" in output
    assert 'declare what the step uses in its needs=(...), e.g. needs=("k8s",)' in output
    assert "seen: []" in output and "Traceback" not in output


def test_the_clock_session_stops_its_clock(pytester: pytest.Pytester) -> None:
    import threading

    def clocks() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "twin-clock"}

    _project(pytester, "Feature: F\n  Scenario: Scaled\n    When we wait 1 agent tick\n    Then the session is noted\n")
    before = clocks()
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--target", "twin", "-s",
                                          "--target-option", "clock=scaled:1000")
    assert result.ret == 0, result.stdout.str()
    assert "seen: [('ClockSession', 'path-b'," in result.stdout.str()  # it ran on the scaled clock's session
    assert clocks() == before  # its timer thread ended with the run


def test_the_clock_session_and_the_start_of_one_run_read_its_world_once() -> None:
    from stepgraph.targets.twin import TwinTarget

    target, options = TwinTarget(env={}), {"world": "path-b"}
    target.configure(options)  # as gating does
    clock = target.clock_session(options)
    world = target.world
    session = target.start(options)
    try:
        assert target.world is world  # not read and validated again for the same options
    finally:
        target.stop(session)
        target.stop(clock)
