"""Counter checks against the agent's declared metric families: a typo is a compile error, and a
family the running agent does not expose fails the check (never a silent 0) unless the step
allows it (`… or absent`). On a PA-late twin, which has no dcgm_enforce_failures_total."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepgraph.dsl import Bindings, CheckFailed, FinalizerStack, Ref, StepContext
from stepgraph.steps import power_agent
from stepgraph.targets.twin import TwinTarget

PROFILE = Path(__file__).parents[2] / "examples" / "profiles" / "path-b.yaml"


@pytest.fixture(scope="module")
def late(tmp_path_factory: pytest.TempPathFactory):
    world = tmp_path_factory.mktemp("world") / "pa-late.yaml"
    world.write_text(PROFILE.read_text().replace("generation: PA-9790", "generation: PA-late"))
    target = TwinTarget(env={})
    session = target.start({"world": str(world)})
    ctx = StepContext(session=session, bindings=Bindings(), finalizers=FinalizerStack())
    session.clock.sleep(20)  # the agent is up and has ticked
    ctx.bindings.bind("c0", power_agent.baseline(ctx, power_agent.NoParams()))
    yield ctx
    target.stop(session)


def test_a_family_the_agent_does_not_expose_fails_the_check(late: StepContext) -> None:
    params = power_agent.UnchangedParams(metric="dcgm_enforce_failures_total", since=Ref("c0"))
    with pytest.raises(CheckFailed) as failure:
        power_agent.counter_unchanged(late, params)
    text = str(failure.value)
    assert "counter family dcgm_enforce_failures_total is absent from the agent's metrics in the baseline or now" in text
    assert "declared by generations pa-9790, pa-optin" in text and "write `… or absent`" in text
    assert "scraped counters: " in text and "multi_pod_gpu_total" in text


def test_or_absent_accepts_a_missing_family_and_still_checks_a_present_one(late: StepContext) -> None:
    power_agent.counter_unchanged_or_absent(late, power_agent.UnchangedParams(metric="dcgm_enforce_failures_total", since=Ref("c0")))
    power_agent.counter_unchanged_or_absent(late, power_agent.UnchangedParams(metric="apply_failures_total", since=Ref("c0")))
    power_agent.counter_unchanged(late, power_agent.UnchangedParams(metric="multi_pod_gpu_total{disposition=conflict}", since=Ref("c0")))


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ("multi_pod_gpu_totl", "the Power Agent has no counter 'multi_pod_gpu_totl' — did you mean multi_pod_gpu_total?"),
        ("multi_pod_gpu_total{dispositon=conflict}", "multi_pod_gpu_total has no label 'dispositon' — its labels: disposition"),
        ("multi_pod_gpu_total{disposition=conflit}", "multi_pod_gpu_total{disposition} is never 'conflit' — it is one of agree, conflict"),
        ("applied_limit_watts", "'applied_limit_watts' is a gauge, not a counter"),
    ],
)
def test_a_counter_the_agent_does_not_declare_is_a_compile_error(metric: str, message: str) -> None:
    with pytest.raises(ValueError) as error:
        power_agent.UnchangedParams(metric=metric, since=Ref("c0"))
    assert message in str(error.value)
