"""The live test's real manifests, applied unchanged to the twin, behave as on the real node.

They are read from `<repo>/../shared/reference/external/multi-dgd-live-test/` (the nearest
`shared/` beside the repo or one of its parents) and never copied into the repo.
"""

from __future__ import annotations

import pytest
from kubernetes import client
from reference_data import LIVE_MANIFESTS, LIVE_MANIFESTS_ABSENT

from stepgraph.dsl import Bindings, FinalizerStack, StepContext
from stepgraph.steps._cluster import cluster
from stepgraph.steps.k8s import apply_documents, load_manifest
from stepgraph.targets.twin import TwinTarget

EXTERNAL = LIVE_MANIFESTS
pytestmark = pytest.mark.skipif(not EXTERNAL.is_dir(), reason=LIVE_MANIFESTS_ABSENT)


@pytest.fixture
def twin_ctx(request: pytest.FixtureRequest):
    target = TwinTarget(env={})
    session = target.start(dict(request.param))
    ctx = StepContext(session=session, bindings=Bindings(), finalizers=FinalizerStack())
    yield target, ctx
    target.twin.stop()


def apply_unchanged(ctx: StepContext, name: str) -> None:
    assert EXTERNAL is not None
    apply_documents(ctx, load_manifest(EXTERNAL / name, cluster(ctx).namespace))


def running_pods(ctx: StepContext, selector: str) -> list[client.V1Pod]:
    pods = cluster(ctx).pods(selector, on_node=False)
    return [p for p in pods if p.status.phase == "Running"]


def gpus_of(target: TwinTarget, pod: client.V1Pod) -> list[set[str]]:
    """For each host process of the pod: the GPU UUIDs it holds a compute context on."""
    host = target.twin.host
    return [set(host.process(pid).gpus) for pid in host.pids_of_pod(pod.metadata.uid)]


@pytest.mark.parametrize("twin_ctx", [{"world": "path-b"}], indirect=True)
def test_stub_workers_get_their_gpus_and_the_bystander_sees_all(twin_ctx) -> None:
    target, ctx = twin_ctx
    for name in ("00-namespace.yaml", "50-stub-workers.yaml", "40-conflict-bystander-pod.yaml"):
        apply_unchanged(ctx, name)
    ctx.clock.sleep(30)
    workers = running_pods(ctx, "purpose=power-aware-multi-dgd-test,nvidia.com/dynamo-component-type=worker")
    claimed = {p.metadata.name: int(p.spec.containers[0].resources.limits["nvidia.com/gpu"]) for p in workers}
    assert sorted(claimed.values()) == [1, 1, 2, 2, 2]
    held: set[str] = set()
    for pod in workers:
        contexts = gpus_of(target, pod)
        assert contexts, f"{pod.metadata.name} opened no compute context"
        pod_gpus = set().union(*contexts)
        assert len(pod_gpus) == claimed[pod.metadata.name]
        held |= pod_gpus
    inventory = target.twin.inventory
    assert held == set(inventory.uuids)  # 1+1+2+2+2 covers all eight GPUs, each once

    (bystander,) = running_pods(ctx, "role=conflict-bystander")
    assert not (bystander.spec.containers[0].resources.limits or {}).get("nvidia.com/gpu")
    (context,) = gpus_of(target, bystander)
    assert context == {inventory.uuid(0)}  # cuda:0 = the first of all visible GPUs


@pytest.mark.parametrize("twin_ctx", [{"world": "path-a"}], indirect=True)
def test_dgds_produce_their_worker_and_planner_pods(twin_ctx) -> None:
    _, ctx = twin_ctx
    for name in ("30-vllm-dgd-A.yaml", "31-vllm-dgd-B.yaml", "32-vllm-dgd-C.yaml"):
        apply_unchanged(ctx, name)
    ctx.clock.sleep(30)
    by_dgd: dict[str, list[str]] = {}
    for pod in running_pods(ctx, "nvidia.com/dynamo-component-type in (worker,planner)"):
        labels = pod.metadata.labels
        role = labels.get("nvidia.com/dynamo-sub-component-type") or labels["nvidia.com/dynamo-component-type"]
        by_dgd.setdefault(labels["nvidia.com/dynamo-graph-deployment-name"], []).append(role)
    assert {dgd: sorted(roles) for dgd, roles in by_dgd.items()} == {
        "vllm-dgd-a": ["decode", "planner", "prefill"],
        "vllm-dgd-b": ["decode", "planner", "prefill"],
        "vllm-dgd-c": ["decode", "planner"],
    }
