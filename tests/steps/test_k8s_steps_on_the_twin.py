"""Kubernetes steps and their compensations, on a twin: only what a step created is removed, and
what a step changed on a prepared node is put back."""

from __future__ import annotations

import pytest

from stepgraph.dsl import Bindings, FinalizerStack, StepContext
from stepgraph.steps import k8s
from stepgraph.steps._cluster import POWER_ANNOTATION, cluster
from stepgraph.targets.twin import TwinTarget


@pytest.fixture
def ctx():
    target = TwinTarget(env={})
    session = target.start({"world": "path-b"})
    yield StepContext(session=session, bindings=Bindings(), finalizers=FinalizerStack())
    target.twin.stop()


def _annotation(ctx: StepContext, pod: str) -> str | None:
    return (cluster(ctx).pod(pod).metadata.annotations or {}).get(POWER_ANNOTATION)


def test_apply_adopts_what_exists_and_its_compensation_deletes_only_what_it_created(ctx: StepContext) -> None:
    prepared = k8s.apply(ctx, k8s.ApplyParams(manifest="50-stub-workers.yaml"))  # a node prepared by hand
    assert all(ref.created for ref in prepared)
    again = k8s.apply(ctx, k8s.ApplyParams(manifest="50-stub-workers.yaml"))
    assert not any(ref.created for ref in again)
    bystander = k8s.apply(ctx, k8s.ApplyParams(manifest="40-conflict-bystander.yaml"))
    k8s.delete_created(ctx, k8s.ApplyParams(manifest="50-stub-workers.yaml"), again)
    k8s.delete_created(ctx, k8s.ApplyParams(manifest="40-conflict-bystander.yaml"), bystander)
    names = {p.metadata.name for p in cluster(ctx).pods("purpose=power-aware-multi-dgd-test", on_node=False)}
    assert names == {"vllm-dgd-a-prefill", "vllm-dgd-a-decode", "vllm-dgd-b-prefill", "vllm-dgd-b-decode", "vllm-dgd-c-decode"}


def test_restart_gives_a_new_uid_and_its_compensation_restores_the_original_pod(ctx: StepContext) -> None:
    k8s.apply(ctx, k8s.ApplyParams(manifest="50-stub-workers.yaml"))
    ctx.clock.sleep(5)
    params = k8s.RestartParams(pod="vllm-dgd-a-prefill", watts=360)
    record = k8s.restart_pod(ctx, params)
    assert record["new_uid"] != record["old_uid"] and _annotation(ctx, "vllm-dgd-a-prefill") == "360"
    k8s._put_original_back(ctx, params, record)
    assert _annotation(ctx, "vllm-dgd-a-prefill") == "350"


@pytest.mark.parametrize("previous", ["325", None])
def test_annotate_compensation_puts_back_the_previous_value_or_removes_it(ctx: StepContext, previous: str | None) -> None:
    k8s.apply(ctx, k8s.ApplyParams(manifest="50-stub-workers.yaml"))
    c = cluster(ctx)
    c.core.patch_namespaced_pod("vllm-dgd-a-decode", c.namespace, {"metadata": {"annotations": {POWER_ANNOTATION: previous}}})
    params = k8s.AnnotateParams(pod="vllm-dgd-a-decode", watts=310)
    before = k8s.set_power_annotation(ctx, params)
    assert before == previous and _annotation(ctx, "vllm-dgd-a-decode") == "310"
    k8s._restore_annotation(ctx, params, before)
    assert _annotation(ctx, "vllm-dgd-a-decode") == previous


def test_an_unknown_manifest_names_where_it_looked(ctx: StepContext) -> None:
    with pytest.raises(FileNotFoundError, match=r"examples/manifests/target/60-nothing\.yaml"):
        k8s.apply(ctx, k8s.ApplyParams(manifest="60-nothing.yaml"))
