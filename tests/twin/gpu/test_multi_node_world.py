"""A world with several nodes → one twin cluster: each node with its SKU, GPU count, labels, taints
and switches; the agent DaemonSet puts one Power Agent on every node it tolerates; each node's
device plugin, host process table and GPU board are its own; DGD pods land across nodes."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter

import pytest
from e2e_rig import ANNOTATION, NVML_CAPS, TORCH_LOOP
from kubernetes import client, config
from kubernetes.stream import stream

from stepgraph.twin import Twin
from stepgraph.twin.world import World, WorldError, load_world, parse_world, profile
from stepgraph.twin.world_install import build_twin

FLEET = """
nodes:
  - {name: gpu, count: 2}
  - {name: small, gpus: 4, sku: H100-SXM5-80GB, labels: {rack: r7}}
  - {name: denied, gpus: 2, faults: {nvml_no_permission: true}}
  - {name: infra, gpus: 1, taints: [{key: dedicated, value: infra, effect: NoSchedule}]}
"""
AGENT = "app.kubernetes.io/component=power-agent"
NS = "dynamo-power-test"


@pytest.fixture
def fleet():
    twin = build_twin(parse_world(FLEET)).start()
    try:
        yield twin, client.CoreV1Api(twin.api_client())
    finally:
        twin.stop()


def pinned_pod(core, name, node, gpus, cap):
    container = {"name": "w", "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.1",
                 "command": ["python3", "-u", "-c", TORCH_LOOP],
                 "resources": {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"nvidia.com/gpu": str(gpus)}}}
    body = {"metadata": {"name": name, "annotations": {ANNOTATION: str(cap)}},
            "spec": {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": node},
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                     "containers": [container]}}
    return core.create_namespaced_pod(NS, body)


def agent_on(core, node):
    [pod] = core.list_namespaced_pod(NS, label_selector=AGENT, field_selector=f"spec.nodeName={node}").items
    return pod.metadata.name


def nvml_caps_through(core, pod):
    out = stream(core.connect_get_namespaced_pod_exec, pod, NS, command=["python", "-c", NVML_CAPS],
                 stderr=True, stdin=False, stdout=True, tty=False)
    return {int(k): int(v) for k, v in (line.split("=") for line in out.split())}


def test_each_node_has_its_sku_gpu_count_labels_taints_and_address(fleet):
    twin, core = fleet
    nodes = {n.metadata.name: n for n in core.list_node().items}
    assert sorted(nodes) == ["denied", "gpu-1", "gpu-2", "infra", "small"]
    assert {k: n.status.capacity["nvidia.com/gpu"] for k, n in nodes.items()} == {
        "gpu-1": "8", "gpu-2": "8", "small": "4", "denied": "2", "infra": "1"}
    assert nodes["small"].metadata.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert nodes["small"].metadata.labels["rack"] == "r7"
    assert nodes["small"].metadata.labels["kubernetes.io/hostname"] == "small"
    assert [(t.key, t.value, t.effect) for t in nodes["infra"].spec.taints] == [("dedicated", "infra", "NoSchedule")]
    assert len({n.status.addresses[0].address for n in nodes.values()}) == 5
    uuids = [u for node in twin.nodes for u in node.inventory.uuids]
    assert len(uuids) == len(set(uuids)) == 23


def test_the_agent_daemonset_runs_one_agent_per_tolerated_node(fleet):
    twin, core = fleet
    twin.clock.sleep(5)
    agents = core.list_namespaced_pod(NS, label_selector=AGENT).items
    assert Counter(p.spec.node_name for p in agents) == Counter(["gpu-1", "gpu-2", "small", "denied"])
    assert all(p.status.phase == "Running" for p in agents)
    assert len({p.status.pod_ip for p in agents}) == 4
    assert {p.spec.node_name: p.status.host_ip for p in agents}["gpu-2"] == "10.224.0.5"


def test_a_pod_is_capped_on_its_node_only_and_exec_reaches_that_nodes_agent(fleet):
    twin, core = fleet
    pod = pinned_pod(core, "w-small", "small", 2, 350)
    twin.clock.sleep(5 + 15)  # start-up, then an agent tick
    small = twin.gpu.directory.get("small").board
    assert sorted(small.caps_w().values()) == [350, 350, 700, 700]
    assert all(set(d.board.caps_w().values()) == {400} for d in twin.gpu.directory if d.node_name != "small")
    claimed = twin.kubelets["small"].node.allocator.claimed(pod.metadata.uid)
    assert len(claimed) == 2 and set(claimed) <= set(twin.kubelets["small"].node.inventory.uuids)
    assert twin.kubelets["small"].node.host.pids_of_pod(pod.metadata.uid)
    assert not twin.kubelets["gpu-1"].node.host.pids_of_pod(pod.metadata.uid)
    assert sorted(nvml_caps_through(core, agent_on(core, "small")).values()) == [350, 350, 700, 700]
    assert set(nvml_caps_through(core, agent_on(core, "gpu-1")).values()) == {400}


def test_a_switch_set_on_one_node_breaks_that_node_only(fleet):
    twin, core = fleet
    pinned_pod(core, "w-denied", "denied", 1, 300)
    pinned_pod(core, "w-gpu-2", "gpu-2", 1, 300)
    twin.clock.sleep(5 + 15 + 15)
    assert sorted(twin.gpu.directory.get("denied").board.caps_w().values()) == [400, 400]  # writes refused
    assert sorted(twin.gpu.directory.get("gpu-2").board.caps_w().values()) == [300] + [400] * 7
    assert twin.gpu.faults.nvml_no_permission is False  # the twin's own board is untouched


def test_an_agent_switch_set_on_one_node_changes_that_nodes_agent_only():
    world = parse_world("faults: {gpu_assignment: sequential}\n"
                        "nodes: [{name: good}, {name: buggy, faults: {agent_writes_wrong_gpu: true}}]")
    with build_twin(world) as twin:
        core = client.CoreV1Api(twin.api_client())
        for node in ("good", "buggy"):
            pinned_pod(core, f"w-{node}", node, 1, 300)  # sequential: each claims its node's GPU 0
        twin.clock.sleep(5 + 15)
        assert twin.gpu.directory.get("good").board.caps_w()[0] == 300
        caps = twin.gpu.directory.get("buggy").board.caps_w()
        assert (caps[0], caps[1]) == (400, 300)  # GPU 0's cap written to GPU 1


def test_a_run_time_flip_of_the_board_reaches_nodes_without_their_own_setting(fleet):
    twin, _ = fleet
    twin.gpu.faults.set("gpu_assignment", "sequential")
    assert twin.kubelets["gpu-1"].node.allocator.mode == "sequential"
    assert twin.gpu.directory.get("denied").faults.nvml_no_permission is True
    twin.gpu.faults.set("nvml_no_permission", False)
    assert twin.gpu.directory.get("denied").faults.nvml_no_permission is True  # the node's own setting wins


def test_path_a_workers_land_across_nodes_and_each_agent_caps_its_own():
    data = load_world(profile("path-a")).model_dump()
    data["nodes"] = [{"name": "left", "gpus": 4}, {"name": "right", "gpus": 4}]
    twin = build_twin(World.model_validate(data)).start()
    try:
        twin.clock.sleep(180)  # pods start, models load, planners annotate, agents tick
        core = client.CoreV1Api(twin.api_client())
        workers = core.list_namespaced_pod(NS, label_selector="nvidia.com/dynamo-component-type=worker").items
        assert {p.spec.node_name for p in workers} == {"left", "right"}
        caps = Counter(c for d in twin.gpu.directory for c in d.board.caps_w().values())
        assert caps == Counter({350: 1, 325: 3, 375: 2, 300: 2})
    finally:
        twin.stop()


def test_adding_nodes_leaves_the_first_node_as_a_one_node_twin_draws_it():
    with Twin(seed=7) as one:
        alone = one.inventory.uuids
    world = parse_world("seed: 7\nnodes: [{name: twin-gpu-node}, {name: other}]")
    with build_twin(world) as twin:
        assert twin.inventory.uuids == alone
        assert twin.kubelets["other"].node.inventory.uuids != alone


@pytest.mark.parametrize("text, message", [
    ("nodes: [{name: a, count: 2}, {name: a-1}]", "node names must be unique"),
    ("nodes: [{name: a, faults: {nvml_no_permision: true}}]", "1:28: unknown key `nodes.0.faults.nvml_no_permision`"),
    ("nodes: [{name: a, taints: [{key: x, effect: Sometimes}]}]", "1:37: `nodes.0.taints.0.effect`"),
    ("nodes: [{name: a, count: 0}]", "`nodes.0.count`: Input should be greater than or equal to 1"),
    ("nodes: [{name: a, faults: {rbac_namespace_restricted: true}}]",
     "1:9: `nodes.0`: faults.rbac_namespace_restricted is the chart's RBAC, which has no node scope"),
])
def test_bad_node_entries_are_named_with_their_position(text, message):
    with pytest.raises(WorldError) as err:
        parse_world(text, "w.yaml")
    assert message in str(err.value)


def test_twin_up_serves_a_multi_node_world(tmp_path):
    world = tmp_path / "fleet.yaml"
    world.write_text(FLEET)
    proc = subprocess.Popen([sys.executable, "-m", "stepgraph.twin.cli", "up", "--world", str(world)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        path = proc.stdout.readline().strip()
        assert path, proc.stderr.read() if proc.poll() is not None else "no kubeconfig path printed"
        core = client.CoreV1Api(config.new_client_from_config(config_file=path))
        assert len(core.list_node().items) == 5
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
