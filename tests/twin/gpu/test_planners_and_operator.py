"""Reference planners annotate only their own DGD's workers; the operator renders DGDs into pods."""

from __future__ import annotations

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families
from stepgraph.twin.faults import Faults
from stepgraph.twin.planners import PlannerConfig, PlannerConfigError
from store_rig import PathA

LINE = re.compile(r"Annotated pod (\S+) with dynamo\.nvidia\.com/gpu-power-limit=(\d+)")
EXPECTED = {("vllm-dgd-a", "prefill"): "350", ("vllm-dgd-a", "decode"): "325", ("vllm-dgd-b", "prefill"): "375",
            ("vllm-dgd-b", "decode"): "325", ("vllm-dgd-c", "decode"): "300"}


def by_role(world):
    return {(p["metadata"]["labels"]["nvidia.com/dynamo-graph-deployment-name"],
             p["metadata"]["labels"]["nvidia.com/dynamo-sub-component-type"]): p["metadata"]["name"]
            for p in world.pods(component_type="worker")}


def patched_by(world):
    """planner DGD → {(pod, W)} from its log, as test T3 reads it."""
    return {dgd: {m.groups() for line in lines if (m := LINE.search(line))} for dgd, lines in world.logs.items()}


def t3_violations(world):
    owner = {p["metadata"]["name"]: p["metadata"]["labels"]["nvidia.com/dynamo-graph-deployment-name"]
             for p in world.pods(component_type="worker")}
    return [(dgd, pod) for dgd, pairs in patched_by(world).items() for pod, _ in pairs if owner.get(pod) != dgd]


def test_operator_stamps_the_contract_labels_on_five_workers_and_three_planners():
    world = PathA()
    workers = world.pods(component_type="worker")
    assert len(workers) == 5 and len(world.pods(component_type="planner")) == 3
    labels = workers[0]["metadata"]["labels"]
    for key in ("nvidia.com/dynamo-graph-deployment-name", "nvidia.com/dynamo-component", "nvidia.com/dynamo-namespace",
                "nvidia.com/dynamo-sub-component-type", "nvidia.com/dynamo-component-pod", "nvidia.com/dynamo-worker-hash"):
        assert key in labels
    assert labels["purpose"] == "power-aware-multi-dgd-test"


def test_dgd_labels_stay_on_the_dgd_when_propagation_is_off():
    world = PathA(propagate=False)
    assert all("purpose" not in p["metadata"]["labels"] for p in world.pods())


def test_a1_a2_each_planner_annotates_exactly_its_own_workers():
    world = PathA()
    world.tick_all()
    roles = by_role(world)
    assert world.annotations() == {roles[k]: v for k, v in EXPECTED.items()}
    assert t3_violations(world) == []
    assert all(patched_by(world)[dgd] for dgd in world.planners)


def test_a3_agg_planner_runs_only_the_decode_branch():
    world = PathA()
    world.tick_all()
    c_log = "\n".join(world.logs["vllm-dgd-c"])
    assert "get_component_pods(PREFILL)" not in c_log and "get_component_pods(DECODE)" in c_log
    assert {w for _, w in patched_by(world)["vllm-dgd-c"]} == {"300"}


def test_patch_only_when_the_value_differs():
    world = PathA()
    world.tick_all()
    before = {p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in world.pods(component_type="worker")}
    world.tick_all()
    after = {p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in world.pods(component_type="worker")}
    assert before == after and sum(len(p) for p in patched_by(world).values()) == 5


def test_a4_an_overwritten_annotation_is_patched_back_next_tick():
    world = PathA()
    world.tick_all()
    pod = by_role(world)[("vllm-dgd-a", "prefill")]
    world.store.patch("pods", world.ns, pod, {"metadata": {"annotations": {"dynamo.nvidia.com/gpu-power-limit": "375"}}})
    world.tick_all()
    assert world.annotations()[pod] == "350"


def test_d2_projected_power_gauges_per_dgd():
    world = PathA()
    world.tick_all()
    projected = {}
    for dgd, planner in world.planners.items():
        for fam in text_string_to_metric_families(planner.render().decode()):
            for s in fam.samples:
                if s.name == "dynamo_planner_power_projected_watts":
                    projected[dgd] = s.value
    assert projected == {"vllm-dgd-a": 350 + 325, "vllm-dgd-b": 2 * 375 + 2 * 325, "vllm-dgd-c": 2 * 300}


def test_dgd_owned_generation_never_patches_pods_but_the_operator_renders_caps():
    world = PathA(planner_generation="dgd-owned")
    world.tick_all()
    assert all(not lines or not any(LINE.search(x) for x in lines) for lines in world.logs.values())
    roles = by_role(world)
    assert world.annotations() == {roles[k]: v for k, v in EXPECTED.items()}


def test_deleting_a_dgd_deletes_its_pods_and_a_deleted_worker_is_replaced():
    world = PathA()
    pod = by_role(world)[("vllm-dgd-a", "decode")]
    world.store.delete("pods", world.ns, pod, grace_period_seconds=0)
    assert pod in {p["metadata"]["name"] for p in world.pods(dgd="vllm-dgd-a")}
    world.store.delete("dynamographdeployments.nvidia.com", world.ns, "vllm-dgd-b")
    assert world.pods(dgd="vllm-dgd-b") == []


@pytest.mark.parametrize("config", ['{"enable_power_awareness": true}', '{"mode": "turbo"}', "{nope"])
def test_bad_planner_config_is_a_start_error(config):
    with pytest.raises(PlannerConfigError):
        PlannerConfig.from_args(["--config", config])


# --- the planner bugs, and the checks that catch them ------------------------------------------

def test_bug_planner_patches_a_foreign_pod_is_caught_by_the_t3_check():
    world = PathA(Faults({"planner_patches_foreign_pod": True}))
    world.tick_all()
    assert t3_violations(world), "the cross-DGD check must see the foreign patch"


def test_bug_agg_planner_runs_prefill_is_caught_by_the_a3_checks():
    world = PathA(Faults({"agg_planner_runs_prefill": True}))
    world.tick_all()
    c_log = "\n".join(world.logs["vllm-dgd-c"])
    assert "get_component_pods(PREFILL)" in c_log
    assert {w for _, w in patched_by(world)["vllm-dgd-c"]} == {"375", "300"}
