"""One node's real parts (host table, GPU board, NVML, hostengine, store) and a process view over
them, plus a helper that runs a real Python child program in a container's environment."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import uuid as uuidlib
from dataclasses import dataclass, field
from pathlib import Path

from stepgraph.twin.apiserver.resources import ResourceTypes
from stepgraph.twin.apiserver.store import Store
from stepgraph.twin.clock import ScaledClock
from stepgraph.twin.devices import DeviceDirectory, NodeDevices
from stepgraph.twin.faults import Faults
from stepgraph.twin.gpus import GpuBoard, make_uuids
from stepgraph.twin.host import Host
from stepgraph.twin.process.view import NodeView, ProcessView
from stepgraph.twin.workloads import WorkloadContext

NODE = "node-a"


@dataclass
class _Node:
    name: str = NODE


def pod(name: str = "agent", *, host_pid: bool = True, volumes=(), mounts=(), run_as_user: int | None = 0,
        namespace: str = "dynamo-system", automount: bool | None = None) -> dict:
    container = {"name": "main", "image": "power-agent:test", "volumeMounts": list(mounts)}
    if run_as_user is not None:
        container["securityContext"] = {"runAsUser": run_as_user}
    spec: dict = {"hostPID": host_pid, "containers": [container], "volumes": list(volumes)}
    if automount is not None:
        spec["automountServiceAccountToken"] = automount
    return {"metadata": {"name": name, "namespace": namespace, "uid": str(uuidlib.UUID(int=random.getrandbits(128)))},
            "spec": spec}


@dataclass
class ViewRig:
    workdir: Path
    rate: float = 75.0
    seed: int = 7
    faults: Faults = field(default_factory=Faults)

    def __post_init__(self) -> None:
        self.host = Host(random.Random(self.seed))
        self.board = GpuBoard.build(NODE, "A100-SXM4-80GB", make_uuids(self.seed, NODE, 4), self.host)
        self.devices = NodeDevices(self.board, self.faults)
        directory = DeviceDirectory()
        directory.add(self.devices)
        self.clock = ScaledClock(self.rate)
        self.store = Store(ResourceTypes(), self.clock, random.Random(self.seed))
        self.view = NodeView(directory, self.store, self.clock, workdir=self.workdir)
        self._views: list[ProcessView] = []

    def open(self, p: dict | None = None, gpus: tuple[str, ...] = (), mounts=()) -> ProcessView:
        p = p or pod()
        ctx = WorkloadContext(pod=p, container=p["spec"]["containers"][0], node=_Node(), host=self.host, gpus=gpus,
                              clock=self.clock, store=self.store, log=lambda line: None, exit=lambda code: None)
        view = self.view.open(ctx, mounts)
        self._views.append(view)
        return view

    def run(self, view: ProcessView, script: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """Run `python -c script` as the container's program, in its environment."""
        base = {k: v for k, v in os.environ.items() if not k.startswith("STEPGRAPH_")}
        argv = view.argv([sys.executable, "-c", script, *args])
        return subprocess.run(argv, env=view.environ(base), capture_output=True, text=True, timeout=timeout,
                              check=False)

    def popen(self, view: ProcessView, script: str, *args: str) -> subprocess.Popen:
        base = {k: v for k, v in os.environ.items() if not k.startswith("STEPGRAPH_")}
        return subprocess.Popen([sys.executable, "-c", script, *args], env=view.environ(base), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def close(self) -> None:
        for view in self._views:
            view.close()
        self.view.close()
        self.clock.close()
