"""Path A in a running twin: operator → pods, planners → annotations and logs, agent → caps.

Read as the live test reads it (T1, T2, T3 plus the agent checks), and with each planner bug on.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from e2e_rig import ANNOTATION, TOPOLOGY, Cluster, family_sum
from stepgraph.twin.world import World, load_world, profile

LINE = re.compile(r"Annotated pod (\S+) with dynamo\.nvidia\.com/gpu-power-limit=(\d+)")
EXPECTED = {("vllm-dgd-a", "prefill"): 350, ("vllm-dgd-a", "decode"): 325, ("vllm-dgd-b", "prefill"): 375,
            ("vllm-dgd-b", "decode"): 325, ("vllm-dgd-c", "decode"): 300}
WORKERS = "nvidia.com/dynamo-component-type=worker,purpose=power-aware-multi-dgd-test"
PLANNERS = "nvidia.com/dynamo-component-type=planner,purpose=power-aware-multi-dgd-test"


def run(**overrides):
    cluster = Cluster("path-a", **overrides)
    cluster.sleep(75)  # pods up, planners' first tick, models loaded, agent ticks after that
    return cluster


@pytest.fixture
def path_a():
    cluster = run()
    yield cluster
    cluster.close()


def workers(cluster):
    return cluster.api.list_namespaced_pod(cluster.ns, label_selector=WORKERS).items


def t3_violations(cluster):
    """T3: every planner patched something, and only workers of its own DGD."""
    owner = {p.metadata.name: p.metadata.labels["nvidia.com/dynamo-graph-deployment-name"] for p in workers(cluster)}
    violations = []
    for planner in cluster.api.list_namespaced_pod(cluster.ns, label_selector=PLANNERS).items:
        dgd = planner.metadata.labels["nvidia.com/dynamo-graph-deployment-name"]
        log = cluster.api.read_namespaced_pod_log(planner.metadata.name, cluster.ns, tail_lines=5000)
        patched = [m.group(1) for m in LINE.finditer(log)]
        if not patched:
            violations.append((dgd, "no patches"))
        violations += [(dgd, pod) for pod in patched if owner.get(pod) != dgd]
    return violations


def test_t1_five_workers_carry_their_dgds_annotation(path_a):
    pods = workers(path_a)
    assert len(pods) == 5
    observed = {(p.metadata.labels["nvidia.com/dynamo-graph-deployment-name"],
                 p.metadata.labels["nvidia.com/dynamo-sub-component-type"]): int(p.metadata.annotations[ANNOTATION])
                for p in pods}
    assert observed == EXPECTED


def test_t2_the_agg_dgd_has_one_decode_worker_at_300(path_a):
    (c,) = [p for p in workers(path_a) if p.metadata.labels["nvidia.com/dynamo-graph-deployment-name"] == "vllm-dgd-c"]
    assert c.metadata.labels["nvidia.com/dynamo-sub-component-type"] == "decode"
    assert c.metadata.annotations[ANNOTATION] == "300"


def test_t3_no_cross_dgd_contamination(path_a):
    assert t3_violations(path_a) == []


def test_agent_caps_and_zero_counters_with_tp_helper_pids(path_a):
    samples = path_a.scrape()
    assert Counter(path_a.nvml_caps().values()) == TOPOLOGY
    assert family_sum(samples, "multi_pod_gpu_total") == 0 and family_sum(samples, "safe_default_applied_total") == 0


def test_bug_planner_patches_a_foreign_pod_fails_t3():
    cluster = run(faults={"planner_patches_foreign_pod": True})
    try:
        assert any(pod != "no patches" for _, pod in t3_violations(cluster))
    finally:
        cluster.close()


def test_bug_agg_planner_runs_prefill_shows_in_its_log():
    cluster = run(faults={"agg_planner_runs_prefill": True})
    try:
        (planner,) = [p for p in cluster.api.list_namespaced_pod(cluster.ns, label_selector=PLANNERS).items
                      if p.metadata.labels["nvidia.com/dynamo-graph-deployment-name"] == "vllm-dgd-c"]
        log = cluster.api.read_namespaced_pod_log(planner.metadata.name, cluster.ns)
        assert "get_component_pods(PREFILL)" in log and "gpu-power-limit=375" in log
    finally:
        cluster.close()


def test_dgd_owned_generation_caps_without_planner_patches():
    cluster = run(operator={"planner_generation": "dgd-owned"})
    try:
        assert sorted(t3_violations(cluster)) == [(d, "no patches") for d in ("vllm-dgd-a", "vllm-dgd-b", "vllm-dgd-c")]
        assert Counter(cluster.nvml_caps().values()) == TOPOLOGY
    finally:
        cluster.close()


def test_without_label_propagation_the_live_selectors_find_nothing():
    cluster = run(operator={"propagate_dgd_labels": False})
    try:
        assert workers(cluster) == []
    finally:
        cluster.close()


def test_a_ninth_gpu_claim_stays_pending_and_the_rest_still_converge():
    base = load_world(profile("path-a")).model_dump()
    extra = {"name": "vllm-dgd-d", "mode": "agg", "decode": {"gpus": 1, "limit_watts": 310},
             "total_gpu_power_limit": 400}
    cluster = Cluster(World.model_validate({**base, "dgds": [*base["dgds"], extra]}))
    try:
        cluster.sleep(75)
        (d_worker,) = cluster.api.list_namespaced_pod(
            cluster.ns, label_selector="nvidia.com/dynamo-graph-deployment-name=vllm-dgd-d,"
                                       "nvidia.com/dynamo-component-type=worker").items
        assert d_worker.status.phase == "Pending"
        assert Counter(cluster.nvml_caps().values()) == TOPOLOGY
    finally:
        cluster.close()
