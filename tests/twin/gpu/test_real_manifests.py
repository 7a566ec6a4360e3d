"""The live test's own manifests, applied to the twin over HTTP, behave as the live run recorded.

Reads `../shared/reference/external/multi-dgd-live-test/*.yaml` (beside the repo root, or one
level up for a worktree); skipped with a reason when that folder is absent.
"""

from __future__ import annotations

from collections import Counter

import pytest
from e2e_rig import TOPOLOGY, Cluster, family_sum
from kubernetes import client
from reference_data import LIVE_MANIFESTS, LIVE_MANIFESTS_ABSENT
from ruamel.yaml import YAML

MANIFESTS = LIVE_MANIFESTS
pytestmark = pytest.mark.skipif(not MANIFESTS.is_dir(), reason=LIVE_MANIFESTS_ABSENT)


def apply(cluster: Cluster, filename: str) -> list[dict]:
    """`kubectl apply -f` for the kinds these files hold (Pod, ConfigMap, DGD, DaemonSet, Service, SA)."""
    api_client = cluster.api.api_client
    apps, custom = client.AppsV1Api(api_client), client.CustomObjectsApi(api_client)
    docs = [d for d in YAML(typ="safe", pure=True).load_all((MANIFESTS / filename).read_text()) if d]
    for doc in docs:
        ns = doc["metadata"].get("namespace", cluster.ns)
        kind = doc["kind"]
        if kind == "Pod":
            cluster.api.create_namespaced_pod(ns, doc)
        elif kind == "ConfigMap":
            cluster.api.create_namespaced_config_map(ns, doc)
        elif kind == "Service":
            cluster.api.create_namespaced_service(ns, doc)
        elif kind == "ServiceAccount":
            cluster.api.create_namespaced_service_account(ns, doc)
        elif kind == "DaemonSet":
            apps.create_namespaced_daemon_set(ns, doc)
        elif kind == "DynamoGraphDeployment":
            group, version = doc["apiVersion"].split("/")
            custom.create_namespaced_custom_object(group, version, ns, "dynamographdeployments", doc)
        else:
            raise AssertionError(f"{filename}: no applier for {kind}")
    return docs


@pytest.fixture
def stubs():
    cluster = Cluster("path-b")
    apply(cluster, "50-stub-workers.yaml")
    cluster.sleep(45)
    yield cluster
    cluster.close()


def test_real_stub_workers_give_the_recorded_topology(stubs):
    samples = stubs.scrape()
    assert Counter(stubs.applied(samples).values()) == TOPOLOGY
    assert Counter(stubs.nvml_caps().values()) == TOPOLOGY
    assert family_sum(samples, "multi_pod_gpu_total") == 0


def test_real_bystander_conflicts_on_exactly_one_gpu(stubs):
    before = stubs.nvml_caps()
    docs = apply(stubs, "40-conflict-bystander-pod.yaml")
    stubs.sleep(35)
    after = stubs.nvml_caps()
    changed = [g for g in after if after[g] != before[g]]
    assert len(changed) == 1 and after[changed[0]] == 280, (before, after)
    stubs.api.delete_namespaced_pod(docs[0]["metadata"]["name"], stubs.ns, grace_period_seconds=0)
    stubs.sleep(20)
    assert stubs.nvml_caps() == before


def test_real_dcgm_daemonset_serves_dcgmi():
    cluster = Cluster("path-b")
    try:
        apply(cluster, "20-nvidia-dcgm-standalone-ds.yaml")
        cluster.sleep(10)
        out, code = cluster.exec(cluster.hostengine_pod(), ["dcgmi", "group", "--list", "-j"])
        assert code == 0 and out.startswith('{"body": []')
    finally:
        cluster.close()


def test_real_dgds_with_the_operator_reach_the_topology():
    cluster = Cluster("path-b", operator={"install": True})  # installs the DGD CRD; no DGDs of its own
    try:
        for name in ("30-vllm-dgd-A.yaml", "31-vllm-dgd-B.yaml", "32-vllm-dgd-C.yaml"):
            apply(cluster, name)
        cluster.sleep(90)
        assert Counter(cluster.nvml_caps().values()) == TOPOLOGY
        assert family_sum(cluster.scrape(), "safe_default_applied_total") == 0
    finally:
        cluster.close()
