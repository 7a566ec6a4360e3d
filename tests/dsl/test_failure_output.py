"""What a reviewer reads when a scenario fails (pytester, a run in this process): one block with
the step's file:line:col and text, expected against observed per GPU, the last observations
with their clock times, and no framework frames; the gherkin reporter names the failing step
and a skipped scenario's reason."""

from __future__ import annotations

import pytest

LIBRARY = '''
from stepgraph.dsl import REGISTRY, CheckFailed, Params, StepContext
from stepgraph.dsl.eventually import StepRefused


class Gpu(Params):
    gpu: int


@REGISTRY.then("rec.caps", "GPU {gpu:int} keeps its cap", key="caps")
def caps(ctx: StepContext, p: Gpu) -> None:
    observed = {0: 350, 1: 325, p.gpu: 250 + int(ctx.clock.now())}
    raise CheckFailed("NVML power limits (W)", expected={0: 350, 1: 325, p.gpu: 300}, observed=observed)


class Pod(Params):
    pod: str


@REGISTRY.when("rec.poke", "the pod {pod} is poked", key="poke")
def poke(ctx: StepContext, p: Pod) -> None:
    raise StepRefused(f'read pod ns/{p.pod}: 404 NotFound: pods "{p.pod}" not found')
'''

FEATURE = """\
Feature: Failures
  @id:F1
  Scenario: a GPU drifts
    Given the value "a" is bound as "state"
    Then within 3 s GPU 5 keeps its cap

  @id:F2 @needs:path-a
  Scenario: needs Path A
    Given the value "a" is bound as "state"

  @id:F3
  Scenario: a pod that is not there
    When the pod "vllm-dgd-c-decod" is poked
"""


@pytest.fixture
def run(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makeini("[pytest]\nstepgraph_paths = scenarios\n")
    pytester.makepyfile(reclib=LIBRARY, conftest="import reclib  # noqa: F401\n")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "f.feature").write_text(FEATURE)
    return pytester.runpytest_inprocess("--target", "local", "--gherkin-terminal-reporter", "-vv", "-p", "no:cacheprovider")


def test_a_failed_check_is_one_block_without_framework_frames(run: pytest.RunResult) -> None:
    run.assert_outcomes(failed=2, skipped=1)
    run.stdout.fnmatch_lines(
        [
            "scenarios/f.feature:5:5: Then within 3 s GPU 5 keeps its cap",
            "  in scenario 'a GPU drifts' (scenarios/f.feature:3:3)",
            "  rec.caps within 3 s: still failing after 3 s (4 attempts): NVML power limits (W)",
            "  expected: {0: 350, 1: 325, 5: 300}",
            "  observed: {0: 350, 1: 325, 5: 253}",
            "     expected  observed",
            "  0  350       350",
            "  1  325       325",
            "  5  300       253       ✗",
            "  last observations (time since the window opened):",
            "    +1 s  {0: 350, 1: 325, 5: 251}",
            "    +2 s  {0: 350, 1: 325, 5: 252}",
            "    +3 s  {0: 350, 1: 325, 5: 253}",
        ]
    )
    out = run.stdout.str()
    assert "Traceback" not in out and "eventually.py" not in out and "_pytest" not in out and "context.py" not in out


def test_the_gherkin_reporter_names_the_failing_step_and_the_skip_reason(run: pytest.RunResult) -> None:
    run.stdout.fnmatch_lines(["    FAILED at scenarios/f.feature:5:5: Then within 3 s GPU 5 keeps its cap"])
    run.stdout.fnmatch_lines(["*SKIPPED (target 'local' lacks path-a)*"])


def test_a_step_refused_by_the_system_is_one_block_without_framework_frames(run: pytest.RunResult) -> None:
    """A pod the scenario names that does not exist is the scenario's mistake, not a bug."""
    run.stdout.fnmatch_lines(
        [
            "scenarios/f.feature:13:5: When the pod \"vllm-dgd-c-decod\" is poked",
            "  in scenario 'a pod that is not there' (scenarios/f.feature:12:3)",
            "  read pod ns/vllm-dgd-c-decod: 404 NotFound: pods \"vllm-dgd-c-decod\" not found",
        ]
    )
    block = run.stdout.str().split("a pod that is not there _", 1)[-1]
    assert "Traceback" not in block and "_pytest" not in block and "reclib.py" not in block
