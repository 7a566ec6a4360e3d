"""A run freezes the heap once its scenarios are collected (so that no later collection of garbage
walks what lives until the end), and still reports every exception a finalizer raises: of garbage
made before the freeze and of garbage made by a step. No collection of garbage runs while a
scenario file is compiled; after it, they run as before. At exit the heap is frozen again, before
the interpreter's last collections."""

from __future__ import annotations

import sys

import pytest

LIBRARY = '''
from stepgraph.dsl import REGISTRY, Params, StepContext


class Cycle:
    """Unreachable only as a cycle, so only a collection of garbage finalizes it."""

    def __init__(self, name: str) -> None:
        self.itself, self.name = self, name

    def __del__(self) -> None:
        raise RuntimeError(f"the finalizer of what {self.name} made raised")


def pytest_collection_finish(session):  # runs just before the plugin freezes the heap
    Cycle("collection")


@REGISTRY.when("rec.drop_cycle", "a step drops a cycle", key="drop_cycle")
def drop(ctx: StepContext, p: Params) -> None:
    Cycle("a step")
'''


def test_finalizers_of_garbage_from_before_and_after_the_freeze_are_reported(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nstepgraph_paths = scenarios\n")
    pytester.makeconftest(LIBRARY)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "f.feature").write_text("Feature: F\n  Scenario: S\n    When a step drops a cycle\n")
    result = pytester.runpytest_subprocess("--target", "local", "-p", "no:cacheprovider")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 0, output
    assert "RuntimeError: the finalizer of what collection made raised" in output
    assert "RuntimeError: the finalizer of what a step made raised" in output


NESTED = """
import gc

import pytest


def test_a_run_inside_this_one():
    assert pytest.main(["-q", "-p", "no:cacheprovider", "--target", "local", "-c", "inner/pytest.ini", "inner"]) == 0
    assert gc.get_freeze_count() == 0
"""


def _inner_project(pytester: pytest.Pytester) -> None:
    """`inner/`: a project with one scenario whose step drops a reference cycle."""
    inner = pytester.path / "inner"
    (inner / "scenarios").mkdir(parents=True)
    (inner / "pytest.ini").write_text("[pytest]\nstepgraph_paths = scenarios\n")
    (inner / "conftest.py").write_text(LIBRARY)
    (inner / "scenarios" / "f.feature").write_text("Feature: F\n  Scenario: S\n    When a step drops a cycle\n")


def test_a_run_inside_a_test_leaves_the_heap_unfrozen(pytester: pytest.Pytester) -> None:
    # The outer run collects no scenario, so it freezes nothing; the inner one does, and must
    # unfreeze at its end, or the outer run's garbage from before would never be collected.
    _inner_project(pytester)
    pytester.makepyfile(test_nested=NESTED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_nested.py")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()


NESTED_IN_A_FROZEN_RUN = """
import gc

import pytest


def test_a_run_inside_this_frozen_one():
    gc.collect()
    gc.freeze()
    assert pytest.main(["-q", "-p", "no:cacheprovider", "--target", "local", "-c", "inner/pytest.ini", "inner"]) == 0
    assert gc.get_freeze_count() > 0, "the inner run thawed the outer run's heap"
"""


def test_a_run_inside_a_frozen_run_leaves_the_heap_frozen_and_still_reports_finalizers(pytester: pytest.Pytester) -> None:
    # The outer run froze its heap (as the test suite does before its in-process runs): the inner
    # run leaves the freezing to it, and still reports what the finalizers of its garbage raise.
    _inner_project(pytester)
    pytester.makepyfile(test_nested=NESTED_IN_A_FROZEN_RUN)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", "test_nested.py")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 0, output
    assert "RuntimeError: the finalizer of what collection made raised" in output
    assert "RuntimeError: the finalizer of what a step made raised" in output


GC_SEEN = """
import gc

from pydantic import field_validator

from stepgraph.dsl import REGISTRY, Params, StepContext

SEEN = []


class Word(Params):
    word: str

    @field_validator("word")
    @classmethod
    def _seen(cls, value: str) -> str:
        SEEN.append(gc.isenabled())  # validated while its file is compiled
        return value


def pytest_collection_finish(session):
    print(f"validated with collection of garbage on: {SEEN}; on after collecting: {gc.isenabled()}")


@REGISTRY.when("rec.says", "a step says {word}", key="says", params=Word)
def says(ctx: StepContext, p: Word) -> None:
    pass
"""


GC_OFF = """

def pytest_configure(config):
    gc.disable()
"""


@pytest.mark.parametrize(("configure", "after"), [("", True), (GC_OFF, False)], ids=["gc on", "gc turned off by the project"])
def test_no_collection_of_garbage_runs_while_a_file_is_compiled_and_the_run_keeps_its_setting(
    pytester: pytest.Pytester, configure: str, after: bool
) -> None:
    # bad.feature comes first and fails to compile: the setting is put back on that path too
    pytester.makeini("[pytest]\nstepgraph_paths = scenarios\n")
    pytester.makeconftest(GC_SEEN + configure)
    (pytester.path / "scenarios").mkdir()
    bad = 'Feature: B\n  Scenario: S\n    When a step says "x"\n    When no step reads this\n'
    (pytester.path / "scenarios" / "bad.feature").write_text(bad)
    (pytester.path / "scenarios" / "good.feature").write_text('Feature: G\n  Scenario: S\n    When a step says "y"\n')
    result = pytester.runpytest_subprocess("--target", "local", "-p", "no:cacheprovider", "-s", "--collect-only")
    output = result.stdout.str() + result.stderr.str()
    assert "undefined step: 'no step reads this'" in output
    assert f"validated with collection of garbage on: [False, False]; on after collecting: {after}" in output


def test_the_heap_is_frozen_at_exit_not_before(pytester: pytest.Pytester) -> None:
    # The interpreter's last collections of garbage, at exit, then walk nothing a run left; a
    # process that goes on after its run keeps collecting as before until it exits.
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    probe = """
import atexit, gc, sys

import pytest
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))  # runs after the plugin's
code = pytest.main(["-q", "-p", "no:cacheprovider", "test_plain.py"])
print("frozen after the run:", gc.get_freeze_count() > 0)
sys.exit(int(code))
"""
    result = pytester.run(sys.executable, "-c", probe)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert result.stdout.lines[-2:] == ["frozen after the run: False", "frozen at exit: True"]
