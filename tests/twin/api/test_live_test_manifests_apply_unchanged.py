"""The live test's real manifests, applied unchanged with `kubernetes.utils.create_from_yaml`:
stub workers get 1+1+2+2+2 GPUs and open compute contexts; the bystander sees every GPU and
opens its context on the first."""

from __future__ import annotations

import re

import pytest
from kubernetes import utils
from stepgraph.twin import Twin

NS = "dynamo-power-test"
WORKERS = {"vllm-dgd-a-prefill": 1, "vllm-dgd-a-decode": 1, "vllm-dgd-b-prefill": 2, "vllm-dgd-b-decode": 2,
           "vllm-dgd-c-decode": 2}
SYSTEMD = re.compile(r"kubepods-(burstable-|besteffort-)?pod([0-9a-f_]+)\.slice")


def apply(k8s, folder, *names):
    for name in names:
        utils.create_from_yaml(k8s, str(folder / name))


def test_stub_workers_get_disjoint_gpus_and_open_compute_contexts(twin, k8s, core, live_manifests):
    apply(k8s, live_manifests, "00-namespace.yaml", "50-stub-workers.yaml")
    twin.clock.sleep(5)
    pods = {p.metadata.name: p for p in core.list_namespaced_pod(NS, label_selector="purpose=power-aware-multi-dgd-test").items}
    assert set(pods) == set(WORKERS)
    seen: list[str] = []
    for name, want in WORKERS.items():
        pod = pods[name]
        assert pod.status.phase == "Running", name
        gpus = twin.node.allocator.claimed(pod.metadata.uid)
        assert len(gpus) == want
        [pid] = twin.host.pids_of_pod(pod.metadata.uid)  # one python process spanning the pod's GPUs
        assert twin.host.process(pid).gpus == gpus
        m = SYSTEMD.search(twin.host.cgroup(pid))
        assert m and m.group(2).replace("_", "-") == pod.metadata.uid
        seen += gpus
    assert sorted(seen) == sorted(twin.inventory.uuids)


def test_bystander_sees_all_gpus_and_lands_on_the_first(twin, k8s, core, live_manifests):
    apply(k8s, live_manifests, "00-namespace.yaml", "50-stub-workers.yaml", "40-conflict-bystander-pod.yaml")
    twin.clock.sleep(5)
    pod = core.read_namespaced_pod("power-conflict-bystander", NS)
    assert pod.status.phase == "Running"
    assert twin.node.allocator.claimed(pod.metadata.uid) == ()
    [pid] = twin.host.pids_of_pod(pod.metadata.uid)
    assert twin.host.process(pid).gpus == (twin.inventory.uuid(0),)
    assert pid in twin.host.pids_on_gpu(twin.inventory.uuid(0))
    assert len(twin.host.pids_on_gpu(twin.inventory.uuid(0))) == 2  # the bystander and a stub worker


def test_dcgm_hostengine_manifest_creates_serviceaccount_service_and_daemonset(twin, k8s, core, apps, live_manifests):
    apply(k8s, live_manifests, "00-namespace.yaml")
    try:
        utils.create_from_yaml(k8s, str(live_manifests / "20-nvidia-dcgm-standalone-ds.yaml"))
    except utils.FailToCreateError as exc:  # say what the twin refused, not just that it did
        pytest.fail(f"twin refused the DCGM manifest: {exc}")
    assert core.read_namespaced_service("nvidia-dcgm-standalone", NS).spec.cluster_ip == "None"
    twin.clock.sleep(10)
    [pod] = core.list_namespaced_pod(NS, label_selector="app=nvidia-dcgm-standalone").items
    assert pod.status.phase == "Running"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_seed_gives_a_disjoint_layout_of_all_eight_gpus(seed, live_manifests):
    with Twin(seed=seed) as t:
        k8s = t.api_client()
        apply(k8s, live_manifests, "00-namespace.yaml", "50-stub-workers.yaml")
        claims = [t.node.allocator.claimed(p["metadata"]["uid"]) for p in t.store.list("pods", NS)]
        k8s.close()
    flat = [u for c in claims for u in c]
    assert sorted(flat) == sorted(set(flat)) and len(flat) == 8


def test_the_layout_of_the_stub_workers_changes_with_the_seed(live_manifests):
    def layout(seed):
        with Twin(seed=seed) as t:
            k8s = t.api_client()
            apply(k8s, live_manifests, "00-namespace.yaml", "50-stub-workers.yaml")
            k8s.close()
            return {p["metadata"]["name"]: tuple(t.inventory.index(u) for u in t.node.allocator.claimed(p["metadata"]["uid"]))
                    for p in t.store.list("pods", NS)}
    assert layout(5) == layout(5)
    assert len({tuple(sorted(layout(s).items())) for s in range(4)}) > 1  # Finding #8: not sequential
