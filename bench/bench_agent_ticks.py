"""Wall time to simulate one hour of Power Agent ticks on the twin's virtual clock.

Per node: a host process table, 8 GPUs, one agent (NVML actuator, PA-9790) ticking every 15 s,
listing its node's pods from the twin's real store with a field selector, reading cgroups and
writing caps — i.e. `reconcile_once` as the agent pod runs it, minus HTTP. Five pods per node
in the live topology (1+1+2+2+2 GPUs, TP ranks with helper PIDs).

    .venv/bin/python bench/bench_agent_ticks.py            # 1, 8 and 64 nodes (×8 GPUs, ×5 pods)
    .venv/bin/python bench/bench_agent_ticks.py 1 8 16 64  # node counts to sweep
"""

from __future__ import annotations

import random
import sys
import time

from stepgraph.twin.apiserver.resources import ResourceTypes
from stepgraph.twin.apiserver.store import Store
from stepgraph.twin.clock import VirtualClock
from stepgraph.twin.devices import NodeDevices
from stepgraph.twin.faults import Faults
from stepgraph.twin.gpus import GpuBoard, make_uuids
from stepgraph.twin.host import Host
from stepgraph.twin.power_agent.agent import RECONCILE_INTERVAL_S
from stepgraph.twin.power_agent.cli import parse
from stepgraph.twin.power_agent.workload import build_agent

TOPOLOGY = [("a-prefill", [0], "350"), ("a-decode", [1], "325"), ("b-prefill", [2, 3], "375"),
            ("b-decode", [4, 5], "325"), ("c-decode", [6, 7], "300")]
NS = "dynamo-power-test"


def build(nodes: int, seed: int = 1):
    clock = VirtualClock()
    store = Store(ResourceTypes(), clock, random.Random(seed))
    store.create("namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    faults = Faults()
    agents, boards = [], []
    for n in range(nodes):
        node = f"gpu-node-{n:02d}"
        host = Host(random.Random(f"{seed}:{node}"))
        board = GpuBoard.build(node, "A100-SXM4-80GB", make_uuids(seed, node, 8), host)
        devices = NodeDevices(board, faults)
        for name, gpus, cap in TOPOLOGY:
            pod = store.create("pods", NS, {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{node}-{name}", "annotations": {"dynamo.nvidia.com/gpu-power-limit": cap}},
                "spec": {"nodeName": node, "containers": [{"name": "w", "image": "stub"}]},
            })
            uuids = [board.gpus[i].uuid for i in gpus]
            host.spawn(pod["metadata"]["uid"], ["python3", "stub"], gpus=uuids)
            for u in uuids[1:]:
                host.spawn(pod["metadata"]["uid"], ["VLLM::Worker_TP"], gpus=[u])
        cli = parse(["python", "/app/power_agent.py", "--safe-default-watts=280", f"--node-name={node}",
                     "--prometheus-port=9100", "--actuator=nvml"], {})

        def list_pods(node=node):
            return store.list("pods", None, field_selector=f"spec.nodeName={node}")

        agent = build_agent(cli, devices, "PA-9790", list_pods, host.cgroup, lambda level, msg: None, faults)
        clock.every(RECONCILE_INTERVAL_S, agent.reconcile_once, first_delay=0)
        agents.append(agent)
        boards.append(board)
    return clock, agents, boards


def run(nodes: int) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    clock, agents, boards = build(nodes)
    t1 = time.perf_counter()
    clock.sleep(3600)
    t2 = time.perf_counter()
    ticks = sum(a.ticks for a in agents)
    expected = {0: 350, 1: 325, 2: 375, 3: 375, 4: 325, 5: 325, 6: 300, 7: 300}
    assert all(b.caps_w() == expected for b in boards), "caps diverged from the topology"
    assert all(a.ticks == 241 for a in agents), {a.ticks for a in agents}
    return t1 - t0, t2 - t1, ticks


def main(argv: list[str]) -> None:
    counts = [int(a) for a in argv] or [1, 8, 64]
    print(f"{'nodes':>5} {'GPUs':>5} {'pods':>5} {'ticks':>7} {'setup s':>8} {'1 h sim s':>10} {'ms/tick':>8}")
    for nodes in counts:
        setup, sim, ticks = run(nodes)
        print(f"{nodes:>5} {nodes * 8:>5} {nodes * 5:>5} {ticks:>7} {setup:>8.3f} {sim:>10.3f} {sim / ticks * 1e3:>8.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
