"""The steps that count, probe and disturb, on a Path B twin: each check holds on the healthy topology
and fails with expected vs observed once what it checks is not so; the disturbing steps undo
themselves through their compensation (the catalog's fault matrix covers the scenarios built on them)."""

from __future__ import annotations

import pytest

from stepgraph.dsl import Bindings, CheckFailed, FinalizerStack, NoParams, Ref, StepContext
from stepgraph.steps import cap_writes, faults, k8s, nvml, planner, power_agent
from stepgraph.targets.twin import TwinTarget


@pytest.fixture(scope="module")
def ctx():
    target = TwinTarget(env={})
    session = target.start({"world": "path-b"})
    context = StepContext(session=session, bindings=Bindings(), finalizers=FinalizerStack())
    refs = k8s.apply(context, k8s.ApplyParams(manifest="50-stub-workers.yaml"))
    session.clock.sleep(40)  # stubs up, two agent ticks: topology caps in place
    yield context
    k8s.delete_created(context, k8s.ApplyParams(manifest="50-stub-workers.yaml"), refs)
    target.twin.stop()


def _local(ctx: StepContext, **bound: object) -> StepContext:
    bindings = Bindings()
    for name, value in bound.items():
        bindings.bind(name, value)
    return StepContext(session=ctx.session, bindings=bindings, finalizers=FinalizerStack())


def _fails(check, *args, expected: str, observed: str) -> str:
    with pytest.raises(CheckFailed) as failure:
        check(*args)
    text = str(failure.value)
    assert "expected:" in text and "observed:" in text and expected in text and observed in text, text
    return text


def test_cap_writes_count_one_per_busy_gpu_per_tick(ctx: StepContext) -> None:
    local = _local(ctx, w0=cap_writes.baseline(ctx, NoParams()))
    ctx.clock.sleep(30)
    two = cap_writes.WritesParams(count=2, since=Ref("w0"))
    cap_writes.each_gpu(local, two)
    _fails(cap_writes.each_gpu, local, cap_writes.WritesParams(count=3, since=Ref("w0")),
           expected="3 on each of 8 GPUs (24 in all)", observed="(16 in all)")


def test_a_stub_worker_has_one_process_per_gpu_so_two_is_refused(ctx: StepContext) -> None:
    nvml.pod_processes(ctx, nvml.PodProcessesParams(role="prefill", dgd="vllm-dgd-b", count=1))
    _fails(nvml.pod_processes, ctx, nvml.PodProcessesParams(role="prefill", dgd="vllm-dgd-b", count=2),
           expected="its 2 GPU(s), one of them with ≥ 2", observed="vllm-dgd-b-prefill")


def test_a_fault_step_flips_the_switch_and_its_compensation_puts_it_back(ctx: StepContext) -> None:
    c = power_agent.cluster(ctx)
    local = _local(ctx)
    previous = faults.fault_on(local, faults.FaultParams(name="agent_never_counts"))
    assert previous == {"agent_never_counts": False}
    assert faults.twin_call(c, "GET", faults.FAULTS_PATH)["switches"]["agent_never_counts"] is True
    faults.fault_set(local, faults.FaultValueParams(name="dcgm_enforce_fails_gpus", value="[1, 2]"))
    assert faults.twin_call(c, "GET", faults.FAULTS_PATH)["switches"]["dcgm_enforce_fails_gpus"] == [1, 2]
    faults._put_back(local, NoParams(), {"agent_never_counts": False, "dcgm_enforce_fails_gpus": []})
    switches = faults.twin_call(c, "GET", faults.FAULTS_PATH)["switches"]
    assert switches["agent_never_counts"] is False and switches["dcgm_enforce_fails_gpus"] == []
    _fails(faults.fault_on, local, faults.FaultParams(name="no_such_switch"),
           expected="one of agent_", observed="no_such_switch")
    _fails(faults.fault_set, local, faults.FaultValueParams(name="dcgm_enforce_fails_gpus", value="yes"),
           expected="a value of the switch's type", observed="dcgm_enforce_fails_gpus")


def test_the_agentless_default_check_refuses_while_an_agent_runs_and_holds_after_a_stop(ctx: StepContext) -> None:
    _fails(power_agent.stopped_all_default, ctx, NoParams(), expected="none", observed="power-agent-")
    local = _local(ctx)
    power_agent.stop(local, NoParams())
    try:
        power_agent.stopped_all_default(local, NoParams())
    finally:
        power_agent._unpause(local, NoParams(), None)
    ctx.clock.sleep(20)
    nvml.caps_multiset(ctx, nvml.CapsParams(caps="350, 325×3, 375×2, 300×2"))


def test_a_crashed_agent_leaves_its_caps_and_the_new_one_takes_over(ctx: StepContext) -> None:
    local = _local(ctx)
    old = power_agent.restart(local, power_agent.RestartParams(how="crashes"))
    assert power_agent.cluster(ctx).find_agent().metadata.uid != old
    nvml.caps_multiset(ctx, nvml.CapsParams(caps="350, 325×3, 375×2, 300×2"))
    with pytest.raises(ValueError, match="write `crashes`"):
        power_agent.RestartParams(how="dies")


def test_the_doc_string_fault_step_sets_the_yaml_value_below_it(ctx: StepContext) -> None:
    local, c = _local(ctx), faults.cluster(ctx)
    previous = faults.fault_set_doc(local, faults.FaultValueParams(name="dcgm_enforce_fails_gpus", value="[0,\n 3]\n"))
    assert faults.twin_call(c, "GET", faults.FAULTS_PATH)["switches"]["dcgm_enforce_fails_gpus"] == [0, 3]
    faults._put_back(local, NoParams(), previous)
    assert faults.twin_call(c, "GET", faults.FAULTS_PATH)["switches"]["dcgm_enforce_fails_gpus"] == []


def test_the_worker_annotation_table_holds_on_the_topology_and_fails_on_a_wrong_row(ctx: StepContext) -> None:
    rows = [
        {"dgd": "vllm-dgd-a", "role": "prefill", "watts": "350"},
        {"dgd": "vllm-dgd-a", "role": "decode", "watts": "325 W"},
        {"dgd": "vllm-dgd-b", "role": "prefill", "watts": "375"},
        {"dgd": "vllm-dgd-b", "role": "decode", "watts": "325"},
        {"dgd": "vllm-dgd-c", "role": "decode", "watts": "300000 mW"},
    ]
    planner.worker_annotations_table(ctx, planner.WorkerLimits.model_validate({"rows": rows}))
    wrong = [*rows[:4], {"dgd": "vllm-dgd-c", "role": "decode", "watts": "310"}]
    _fails(planner.worker_annotations_table, ctx, planner.WorkerLimits.model_validate({"rows": wrong}),
           expected="'vllm-dgd-c/decode': 310", observed="vllm-dgd-c-decode=300")
    with pytest.raises(ValueError, match="vllm-dgd-a/prefill has more than one row"):
        planner.WorkerLimits.model_validate({"rows": [rows[0], rows[0]]})
