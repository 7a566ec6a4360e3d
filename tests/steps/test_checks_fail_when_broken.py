"""Every check step of the libraries, on a twin: it holds on the healthy topology, and it fails with
expected vs observed once the state it checks is broken (checks the catalog's fault matrix does
not reach directly: blast radius, recovery, defaults, UIDs, pod and planner counts, absolute counts)."""

from __future__ import annotations

import pytest

from stepgraph.dsl import Bindings, CheckFailed, FinalizerStack, NoParams, Ref, StepContext
from stepgraph.steps import k8s, nvml, planner, power_agent
from stepgraph.steps._cluster import POWER_ANNOTATION, cluster
from stepgraph.targets.twin import TwinTarget


@pytest.fixture(scope="module")
def ctx():
    target = TwinTarget(env={})
    session = target.start({"world": "path-b"})
    context = StepContext(session=session, bindings=Bindings(), finalizers=FinalizerStack())
    context.target = target  # type: ignore[attr-defined]  # for direct GPU-board edits below
    k8s.apply(context, k8s.ApplyParams(manifest="50-stub-workers.yaml"))
    session.clock.sleep(40)  # stubs up, two agent ticks: topology caps in place
    yield context
    target.twin.stop()


def _board(ctx: StepContext):
    return ctx.target.twin.gpu.devices.board  # type: ignore[attr-defined]


def _fails(check, *args, expected: str, observed: str) -> None:
    with pytest.raises(CheckFailed) as failure:
        check(*args)
    text = str(failure.value)
    assert "expected:" in text and "observed:" in text
    assert expected in text and observed in text, text


def test_blast_radius_and_recovery_checks_compare_each_gpu_to_its_baseline(ctx: StepContext) -> None:
    bindings = Bindings()
    bindings.bind("caps0", nvml.baseline_caps(ctx, NoParams()))
    bindings.bind("gpu", 2)
    local = StepContext(session=ctx.session, bindings=bindings, finalizers=FinalizerStack())
    others = nvml.OthersParams(gpu=Ref("gpu"), baseline=Ref("caps0"))
    every = nvml.AllEqualParams(baseline=Ref("caps0"))
    nvml.others_unchanged(local, others)
    nvml.all_equal(local, every)
    gpu5 = _board(ctx).gpus[5]
    before = gpu5.limit_mw
    gpu5.set_limit_mw(250_000)  # a write nobody asked for, on a GPU outside the blast radius
    try:
        _fails(nvml.others_unchanged, local, others, expected=f"{{5: {before // 1000}}}", observed="{5: 250}")
        _fails(nvml.all_equal, local, every, expected=f"{{5: {before // 1000}}}", observed="{5: 250}")
    finally:
        gpu5.set_limit_mw(before)


def test_default_check_fails_while_caps_are_set(ctx: StepContext) -> None:
    _fails(nvml.all_at_default, ctx, NoParams(), expected=": 400", observed=": 3")


def test_cap_of_one_gpu_names_the_gpu_and_all_readings(ctx: StepContext) -> None:
    bindings = Bindings()
    bindings.bind("gpu", 0)
    local = StepContext(session=ctx.session, bindings=bindings, finalizers=FinalizerStack())
    _fails(nvml.cap_of_gpu, local, nvml.GpuCapParams(gpu=Ref("gpu"), watts=280), expected="280 W", observed="all GPUs:")


def test_pod_count_annotation_and_uid_checks(ctx: StepContext) -> None:
    selector = "nvidia.com/dynamo-component-type=worker"
    assert len(k8s.pods_running(ctx, k8s.PodsRunningParams(selector=selector, count=5))) == 5
    _fails(k8s.pods_running, ctx, k8s.PodsRunningParams(selector=selector, count=6), expected="6 running", observed="vllm-dgd-a")
    k8s.power_annotation_is(ctx, k8s.AnnotationIsParams(pod="vllm-dgd-c-decode", watts=300))
    _fails(k8s.power_annotation_is, ctx, k8s.AnnotationIsParams(pod="vllm-dgd-c-decode", watts=310), expected="310", observed="300")
    uid = cluster(ctx).pod("vllm-dgd-c-decode").metadata.uid
    bindings = Bindings()
    bindings.bind("restarted", {"old_uid": uid})
    local = StepContext(session=ctx.session, bindings=bindings, finalizers=FinalizerStack())
    _fails(k8s.has_new_uid, local, k8s.PodNewUidParams(pod="vllm-dgd-c-decode", restarted=Ref("restarted")),
           expected=f"a UID other than {uid}", observed=uid)


def test_worker_table_fails_on_a_wrong_annotation(ctx: StepContext) -> None:
    table = ("vllm-dgd-a/prefill=350, vllm-dgd-a/decode=325, vllm-dgd-b/prefill=375, "
             "vllm-dgd-b/decode=325, vllm-dgd-c/decode=300")
    planner.worker_annotations(ctx, planner.TableParams(table=table))
    c = cluster(ctx)
    c.core.patch_namespaced_pod("vllm-dgd-b-decode", c.namespace, {"metadata": {"annotations": {POWER_ANNOTATION: "375"}}})
    try:
        _fails(planner.worker_annotations, ctx, planner.TableParams(table=table),
               expected="'vllm-dgd-b/decode': 325", observed="vllm-dgd-b-decode=375")
        _fails(planner.only_worker, ctx, planner.OnlyWorkerParams(dgd="vllm-dgd-b", role="decode", watts=325),
               expected="one decode worker annotated 325", observed="vllm-dgd-b-decode")
    finally:
        c.core.patch_namespaced_pod("vllm-dgd-b-decode", c.namespace, {"metadata": {"annotations": {POWER_ANNOTATION: "325"}}})


def test_planner_checks_fail_without_planners(ctx: StepContext) -> None:
    _fails(planner.one_per_dgd, ctx, planner.DgdsParams(dgds="vllm-dgd-a, vllm-dgd-b, vllm-dgd-c"),
           expected="['vllm-dgd-a', 'vllm-dgd-b', 'vllm-dgd-c']", observed="none")
    _fails(planner.patches_own_dgd_only, ctx, NoParams(), expected="no violations", observed="no planner pods found")


def test_absolute_counter_check_reads_the_lifetime_total(ctx: StepContext) -> None:
    power_agent.counter_is(ctx, power_agent.CounterIsParams(metric="multi_pod_gpu_total", value=0))
    _fails(power_agent.counter_is, ctx, power_agent.CounterIsParams(metric="multi_pod_gpu_total", value=1),
           expected="expected: 1", observed="observed: 0")
