"""Scheduler and device plugin: nodeSelector, tolerations, GPU requests without over-commit,
seeded assignment (Finding #8), `NVIDIA_VISIBLE_DEVICES=all`, CDI rejection (Finding #7)."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException

from stepgraph.twin import NodeConfig, Twin


def events_for(core, name):
    return [(e.reason, e.type, e.message) for e in core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={name}").items]


def test_node_selector_mismatch_stays_pending_with_failed_scheduling(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("p", node_selector={"power-test/node": "kaim"}))
    twin.clock.sleep(10)
    pod = core.read_namespaced_pod("p", "default")
    assert pod.status.phase == "Pending" and pod.spec.node_name is None
    cond = next(c for c in pod.status.conditions if c.type == "PodScheduled")
    assert (cond.status, cond.reason) == ("False", "Unschedulable")
    assert ("FailedScheduling", "Warning",
            "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.") in events_for(core, "p")


def test_relabelling_the_node_lets_a_pending_pod_schedule(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("p", node_selector={"power-test/node": "kaim"}))
    core.patch_node(twin.node.name, {"metadata": {"labels": {"power-test/node": "kaim"}}})
    twin.clock.sleep(3)
    assert core.read_namespaced_pod("p", "default").status.phase == "Running"


@pytest.mark.twin(node=NodeConfig(taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]))
def test_taints_need_tolerations(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("plain"))
    core.create_namespaced_pod("default", make_pod("tolerant", tolerations=[
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]))
    twin.clock.sleep(3)
    assert core.read_namespaced_pod("plain", "default").status.phase == "Pending"
    assert core.read_namespaced_pod("tolerant", "default").status.phase == "Running"
    assert any("untolerated taint {nvidia.com/gpu: present}" in m for _, _, m in events_for(core, "plain"))


def test_gpu_requests_never_over_commit_and_freed_gpus_are_reused(twin, core, make_pod):
    for i, n in enumerate([2, 2, 2, 2]):
        core.create_namespaced_pod("default", make_pod(f"w{i}", gpus=n))
    core.create_namespaced_pod("default", make_pod("extra", gpus=1))
    twin.clock.sleep(3)
    claims = [twin.node.allocator.claimed(core.read_namespaced_pod(f"w{i}", "default").metadata.uid) for i in range(4)]
    assert sorted(u for c in claims for u in c) == sorted(twin.inventory.uuids)
    assert core.read_namespaced_pod("extra", "default").status.phase == "Pending"
    assert ("FailedScheduling", "Warning", "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.") in events_for(core, "extra")
    core.delete_namespaced_pod("w0", "default", grace_period_seconds=0)
    twin.clock.sleep(3)
    extra = core.read_namespaced_pod("extra", "default")
    assert extra.status.phase == "Running"
    assert set(twin.node.allocator.claimed(extra.metadata.uid)) <= set(claims[0])


def assignment(seed: int) -> list[tuple[int, ...]]:
    with Twin(seed=seed) as t:
        for i, n in enumerate([1, 1, 2, 2, 2]):
            pod = t.store.create("pods", "default", {"metadata": {"name": f"w{i}"}, "spec": {"containers": [
                {"name": "c", "image": "x:1", "resources": {"limits": {"nvidia.com/gpu": str(n)}}}]}})
            t.store.get("pods", "default", pod["metadata"]["name"])
        return [tuple(t.inventory.index(u) for u in t.node.allocator.claimed(
            t.store.get("pods", "default", f"w{i}")["metadata"]["uid"])) for i in range(5)]


def test_gpu_assignment_is_seeded_random():
    assert assignment(1) == assignment(1)
    assert len({tuple(assignment(s)) for s in range(6)}) > 1  # different seeds, different layouts


def test_sequential_assignment_mode_hands_out_indices_in_order():
    with Twin(node=NodeConfig(gpu_assignment="sequential")) as t:
        for i, n in enumerate([1, 1, 2, 2, 2]):
            t.store.create("pods", "default", {"metadata": {"name": f"w{i}"}, "spec": {"containers": [
                {"name": "c", "image": "x:1", "resources": {"limits": {"nvidia.com/gpu": str(n)}}}]}})
        got = [[t.inventory.index(u) for u in t.node.allocator.claimed(
            t.store.get("pods", "default", f"w{i}")["metadata"]["uid"])] for i in range(5)]
    assert got == [[0], [1], [2, 3], [4, 5], [6, 7]]


def test_visible_devices_all_sees_every_gpu_without_a_claim(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("claim8", gpus=8))
    core.create_namespaced_pod("default", make_pod("all", env={"NVIDIA_VISIBLE_DEVICES": "all"},
                                                   command=["python3", "-c", "import torch; torch.cuda.init()"]))
    twin.clock.sleep(3)
    pod = core.read_namespaced_pod("all", "default")
    assert pod.status.phase == "Running"
    assert twin.node.allocator.claimed(pod.metadata.uid) == ()
    [pid] = twin.host.pids_of_pod(pod.metadata.uid)
    assert twin.host.process(pid).gpus == twin.inventory.uuids


def test_cdi_mode_rejects_a_concrete_uuid(twin, core, make_pod):
    uuid = twin.inventory.uuid(3)
    core.create_namespaced_pod("default", make_pod("pinned", env={"NVIDIA_VISIBLE_DEVICES": uuid}))
    twin.clock.sleep(5)
    pod = core.read_namespaced_pod("pinned", "default")
    waiting = pod.status.container_statuses[0].state.waiting
    assert pod.status.phase == "Pending" and waiting.reason == "CreateContainerError"
    assert f"unresolvable CDI devices management.nvidia.com/gpu={uuid}" in waiting.message
    assert any(r == "Failed" and t == "Warning" and "unresolvable CDI devices" in m for r, t, m in events_for(core, "pinned"))
    assert twin.host.pids_of_pod(pod.metadata.uid) == []


@pytest.mark.twin(node=NodeConfig(cdi_mode=False))
def test_without_cdi_a_concrete_uuid_selects_that_gpu(twin, core, make_pod):
    uuid = twin.inventory.uuid(3)
    core.create_namespaced_pod("default", make_pod("pinned", env={"NVIDIA_VISIBLE_DEVICES": uuid},
                                                   command=["python3", "-c", "import torch; torch.cuda.init()"]))
    twin.clock.sleep(3)
    pod = core.read_namespaced_pod("pinned", "default")
    assert pod.status.phase == "Running"
    [pid] = twin.host.pids_of_pod(pod.metadata.uid)
    assert twin.host.process(pid).gpus == (uuid,)


ZONES = [NodeConfig(name=f"node-{z}", labels={"zone": z, "rank": str(i)}) for i, z in enumerate("abc")]


def affinity(*terms) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


@pytest.mark.twin(nodes=ZONES)
@pytest.mark.parametrize(("terms", "node"), [
    ([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["c"]}]}], "node-c"),
    ([{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a", "b"]}]}], "node-c"),
    ([{"matchExpressions": [{"key": "rank", "operator": "Gt", "values": ["1"]}]}], "node-c"),
    ([{"matchExpressions": [{"key": "rank", "operator": "Lt", "values": ["1"]}]}], "node-a"),
    ([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-b"]}]}], "node-b"),
    # terms are ORed (the first that any node matches wins in node order); expressions in a term ANDed
    ([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]},
                            {"key": "rank", "operator": "Exists"}]},
      {"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}], "node-b"),
    ([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]},
                            {"key": "rank", "operator": "In", "values": ["2"]}]}], None),
])
def test_required_node_affinity_picks_the_node(twin, core, make_pod, terms, node):
    body = make_pod("p")
    body["spec"]["affinity"] = affinity(*terms)
    core.create_namespaced_pod("default", body)
    twin.clock.sleep(3)
    assert core.read_namespaced_pod("p", "default").spec.node_name == node
    if node is None:
        assert ("FailedScheduling", "Warning",
                "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.") in events_for(core, "p")


@pytest.mark.twin(nodes=ZONES)
def test_node_selector_and_affinity_must_both_accept_the_node(twin, core, make_pod, apps):
    body = make_pod("p", node_selector={"zone": "b"})
    body["spec"]["affinity"] = affinity({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b", "c"]}]})
    core.create_namespaced_pod("default", body)
    template = {"metadata": {"labels": {"app": "d"}}, "spec": {
        "containers": [{"name": "m", "image": "i:1"}],
        "affinity": affinity({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]})}}
    apps.create_namespaced_daemon_set("default", {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "d"}}, "template": template}})
    twin.clock.sleep(3)
    assert core.read_namespaced_pod("p", "default").spec.node_name == "node-b"
    daemon_pods = core.list_namespaced_pod("default", label_selector="app=d").items
    assert sorted(p.spec.node_name for p in daemon_pods) == ["node-b", "node-c"]


@pytest.mark.parametrize(("expr", "field", "message"), [
    ({"key": "zone", "operator": "Equals", "values": ["a"]}, "matchExpressions[0].operator",
     'Unsupported value: "Equals": supported values: "DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"'),
    ({"key": "zone", "operator": "In"}, "matchExpressions[0].values",
     "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    ({"key": "zone", "operator": "Exists", "values": ["a"]}, "matchExpressions[0].values",
     "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
    ({"key": "rank", "operator": "Gt", "values": ["x"]}, "matchExpressions[0].values",
     "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"),
])
def test_malformed_node_affinity_is_422(core, make_pod, expr, field, message):
    body = make_pod("p")
    body["spec"]["affinity"] = affinity({"matchExpressions": [expr]})
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("default", body)
    assert err.value.status == 422
    [cause] = json.loads(err.value.body)["details"]["causes"]
    prefix = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
    assert (cause["field"], cause["message"]) == (prefix + field, message)
