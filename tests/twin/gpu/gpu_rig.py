"""A node's GPU side without the API server: real host table, board, NVML/DCGM, and an agent.

`Rig` is the FakeNode of the design doc (§9) built from the twin's real parts: host processes
with cgroup text, the GPU board, the NVML library, the DCGM hostengine and `build_agent` — only
the pod list is handed in as plain dicts (the API server is Twin I's and tested there).
"""

from __future__ import annotations

import random
import uuid as uuidlib

from prometheus_client.parser import text_string_to_metric_families
from stepgraph.twin.devices import NodeDevices
from stepgraph.twin.faults import Faults
from stepgraph.twin.gpus import GpuBoard, make_uuids
from stepgraph.twin.host import Host
from stepgraph.twin.power_agent.cli import parse
from stepgraph.twin.power_agent.policy import ANNOTATION
from stepgraph.twin.power_agent.workload import build_agent

NODE = "node-a"
STATE = "/var/lib/dynamo-power-agent-test/managed_gpus.json"

# DOC §2 topology (B200): pod → (namespace, DGD, GPUs, cap, helper PIDs per GPU beyond the first)
B200_TOPOLOGY = {
    "v-p": ("ns-v", "dgd-v", [0], "450"),
    "v-d": ("ns-v", "dgd-v", [1], "425"),
    "t-p": ("ns-t", "dgd-t", [2, 3], "480"),
    "t-d": ("ns-t", "dgd-t", [4, 5], "450"),
    "s-a": ("ns-s", "dgd-s", [6, 7], "500"),
}
B200_CAPS = {0: 450, 1: 425, 2: 480, 3: 480, 4: 450, 5: 450, 6: 500, 7: 500}


class Rig:
    def __init__(self, sku: str = "B200-SXM-180GB", seed: int = 3, dcgm_order="reversed", faults: Faults | None = None):
        self.rng = random.Random(seed)
        self.host = Host(self.rng)
        self.faults = faults or Faults()
        board = GpuBoard.build(NODE, sku, make_uuids(seed, NODE, 8), self.host)
        self.devices = NodeDevices(board, self.faults, dcgm_order=dcgm_order)
        self.board = board
        self.pods: dict[str, dict] = {}
        self.logs: list[str] = []
        self.list_error: Exception | None = None

    # --- pods and processes --------------------------------------------------------------
    def add_pod(self, name, gpus, annotation=None, namespace="default", dgd=None, helpers=1):
        uid = str(uuidlib.UUID(int=self.rng.getrandbits(128), version=4))
        annotations = {} if annotation is None else {ANNOTATION: annotation}
        labels = {"nvidia.com/dynamo-graph-deployment-name": dgd} if dgd else {}
        pod = {"metadata": {"name": name, "namespace": namespace, "uid": uid, "annotations": annotations, "labels": labels}}
        self.pods[name] = pod
        uuids = [self.board.gpus[i].uuid for i in gpus]
        self.host.spawn(uid, ["python", "worker.py"], gpus=uuids)  # one PID spans all its GPUs
        for _ in range(helpers - 1):  # TP-rank helpers: more PIDs, same pod
            for u in uuids:
                self.host.spawn(uid, ["python", "-c", "rank"], gpus=[u])
        return pod

    def remove_pod(self, name):
        pod = self.pods.pop(name)
        self.host.kill_pod(pod["metadata"]["uid"])

    def topology(self, table=B200_TOPOLOGY, helpers=2):
        for name, (ns, dgd, gpus, cap) in table.items():
            self.add_pod(name, gpus, cap, namespace=ns, dgd=dgd, helpers=helpers)

    def list_pods(self):
        if self.list_error:
            raise self.list_error
        return list(self.pods.values())

    # --- the agent -----------------------------------------------------------------------
    def agent(self, generation="PA-9790", actuator="nvml", safe=350, enforce=False, namespace=None):
        argv = ["python", "/app/power_agent.py", f"--safe-default-watts={safe}", f"--node-name={NODE}",
                "--prometheus-port=9100", f"--actuator={actuator}", f"--dcgm-enforce={str(enforce).lower()}"]
        if namespace:
            argv.append(f"--namespace={namespace}")
        return build_agent(parse(argv, {}), self.devices, generation, self.list_pods, self.host.cgroup,
                           lambda level, msg: self.logs.append(f"{level} {msg}"), self.faults, state_path=STATE)

    def caps(self):
        return self.board.caps_w()


def scrape(agent) -> dict[str, float]:
    """`name{k="v",...}` → value, as the live test keys its samples."""
    samples = {}
    for family in text_string_to_metric_families(agent.metrics.render().decode()):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            samples[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return samples


def family_sum(samples: dict[str, float], prefix: str) -> float:
    return sum(v for k, v in samples.items() if k.startswith(prefix))


BAD_FAMILIES = ("multi_pod_gpu_total", "safe_default_applied_total", "apply_failures_total",
                "dcgm_enforce_failures_total", "cap_clamped_total")


def bad_counter_sums(agent) -> dict[str, float]:
    samples = scrape(agent)
    return {f: family_sum(samples, "dynamo_power_agent_" + f) for f in BAD_FAMILIES}

