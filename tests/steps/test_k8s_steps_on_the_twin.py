"""Kubernetes steps and their compensations, on a twin: only what a step created is removed, and
what a step changed on a prepared node is put back."""

from __future__ import annotations

import pytest

from stepgraph.dsl import Bindings, FinalizerStack, StepContext
from stepgraph.steps import k8s
from stepgraph.steps._cluster import POWER_ANNOTATION, RUN_HOST_ANNOTATION, RUN_LABEL, RUN_STARTED_ANNOTATION, cluster
from stepgraph.targets.twin import TwinTarget

TEST_PODS = "purpose=power-aware-multi-dgd-test"
STUB_WORKERS = ("vllm-dgd-a-prefill", "vllm-dgd-a-decode", "vllm-dgd-b-prefill", "vllm-dgd-b-decode", "vllm-dgd-c-decode")


@pytest.fixture
def ctx():
    target = TwinTarget(env={})
    session = target.start({"world": "path-b"})
    yield StepContext(session=session, bindings=Bindings(), finalizers=FinalizerStack())
    target.twin.stop()


def _annotation(ctx: StepContext, pod: str) -> str | None:
    return (cluster(ctx).pod(pod).metadata.annotations or {}).get(POWER_ANNOTATION)


def _prepare_by_hand(ctx: StepContext, manifest: str, labels: dict[str, str] | None = None) -> None:
    """Create a manifest's pods as an operator would with kubectl: no run label (or the given one)."""
    c = cluster(ctx)
    for doc in k8s.load_manifest(c.manifest(manifest), c.namespace):
        doc["metadata"].setdefault("labels", {}).update(labels or {})
        c.core.create_namespaced_pod(c.namespace, doc)


def _test_pods(ctx: StepContext) -> dict[str, str]:
    return {p.metadata.name: (p.metadata.labels or {}).get(RUN_LABEL, "") for p in cluster(ctx).pods(TEST_PODS, on_node=False)}


def test_apply_adopts_what_exists_and_its_compensation_deletes_only_what_it_created(ctx: StepContext) -> None:
    _prepare_by_hand(ctx, "50-stub-workers.yaml")
    again = k8s.apply(ctx, k8s.ApplyParams(manifest="50-stub-workers.yaml"))
    assert not any(ref.created for ref in again)
    bystander = k8s.apply(ctx, k8s.ApplyParams(manifest="40-conflict-bystander.yaml"))
    assert all(ref.created for ref in bystander)
    k8s.delete_created(ctx, k8s.ApplyParams(manifest="50-stub-workers.yaml"), again)
    k8s.delete_created(ctx, k8s.ApplyParams(manifest="40-conflict-bystander.yaml"), bystander)
    assert _test_pods(ctx) == dict.fromkeys(STUB_WORKERS, "")


def test_what_a_run_creates_carries_its_run_id_host_and_start_time(ctx: StepContext) -> None:
    k8s.apply(ctx, k8s.ApplyParams(manifest="40-conflict-bystander.yaml"))
    pod = cluster(ctx).pod("power-conflict-bystander")
    run = cluster(ctx).run
    assert pod.metadata.labels[RUN_LABEL] == run.id
    assert pod.metadata.annotations[RUN_HOST_ANNOTATION] == run.host and pod.metadata.annotations[RUN_STARTED_ANNOTATION] == run.started


def test_a_create_whose_answer_was_lost_is_recognised_as_our_own_on_retry(ctx: StepContext) -> None:
    first = k8s.apply(ctx, k8s.ApplyParams(manifest="40-conflict-bystander.yaml"))
    retried = k8s.apply(ctx, k8s.ApplyParams(manifest="40-conflict-bystander.yaml"))  # 409 of our own object
    assert [r.created for r in first] == [r.created for r in retried] == [True]


@pytest.mark.parametrize("policy", ["remove", "adopt"])
def test_another_runs_leftovers_are_removed_and_said_so_or_adopted_on_request(ctx: StepContext, policy: str) -> None:
    _prepare_by_hand(ctx, "50-stub-workers.yaml", labels={RUN_LABEL: "deadbeef0001"})  # a killed run's pods
    ctx.session.facts["leftovers"] = policy
    found = k8s.sweep_leftovers(ctx, {("v1", "Pod", cluster(ctx).namespace)})
    assert sorted(found) == sorted(f"Pod/{name}" for name in STUB_WORKERS)
    assert len(ctx.cleanup_notes) == 1 and "deadbeef0001" in ctx.cleanup_notes[0]
    if policy == "remove":
        assert ctx.cleanup_notes[0].startswith("removed") and _test_pods(ctx) == {}
    else:
        assert ctx.cleanup_notes[0].startswith("adopted") and _test_pods(ctx) == dict.fromkeys(STUB_WORKERS, "deadbeef0001")


def test_a_compensation_never_deletes_an_object_the_run_did_not_label(ctx: StepContext) -> None:
    # The create of a step interrupted before its answer: the ref is there, the object is someone else's.
    _prepare_by_hand(ctx, "40-conflict-bystander.yaml")
    c = cluster(ctx)
    k8s.delete_created(ctx, k8s.ApplyParams(manifest="x"), [k8s.ObjectRef("v1", "Pod", c.namespace, "power-conflict-bystander", True)])
    assert c.pod("power-conflict-bystander").metadata.name == "power-conflict-bystander"


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
    with pytest.raises(FileNotFoundError, match=r"manifests/target/60-nothing\.yaml"):
        k8s.apply(ctx, k8s.ApplyParams(manifest="60-nothing.yaml"))


def test_pod_summaries_say_what_the_clients_pod_models_say(ctx: StepContext) -> None:
    c = cluster(ctx)
    _prepare_by_hand(ctx, "50-stub-workers.yaml", labels={"extra": "x"})
    c.core.patch_namespaced_pod(STUB_WORKERS[0], c.namespace, {"metadata": {"annotations": {POWER_ANNOTATION: "250"}}})
    for selector, on_node in ((TEST_PODS, False), (TEST_PODS, True), ("extra=x", False), ("no=such", False), ("", False)):
        models = c.pods(selector, on_node=on_node)
        assert [(s.name, s.phase, s.node, s.labels, s.annotations) for s in c.pod_summaries(selector, on_node=on_node)] == [
            (p.metadata.name, p.status.phase if p.status else None, p.spec.node_name, p.metadata.labels or {},
             p.metadata.annotations or {}) for p in models]
    assert {s.name for s in c.pod_summaries(TEST_PODS, on_node=False)} == set(STUB_WORKERS)
    assert {s.name: s.annotations.get(POWER_ANNOTATION) for s in c.pod_summaries(TEST_PODS)}[STUB_WORKERS[0]] == "250"
    for name in STUB_WORKERS:
        c.core.delete_namespaced_pod(name, c.namespace)
