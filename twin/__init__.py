"""The embedded twin of a GPU test node; it imports nothing of stepgraph.

`Twin` wires one cluster together — clock, store, API server, node (host, device plugin),
scheduler, kubelet, controllers — and is the only object callers need:

    with Twin(seed=3) as twin:
        kubernetes.config.load_kube_config(twin.kubeconfig_path)
        ...                     # the official client, over HTTP on loopback
        twin.clock.sleep(5)     # virtual time: pods start, agents tick

The GPU side installs itself through `hooks` (or `world`): each is called with the twin after the
cluster exists and before the API server accepts requests, and may register workloads
(`twin.workloads`), subscribe to the store, or arm timers on the clock.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

from .apiserver.crds import CrdController
from .apiserver.kubeconfig import write_kubeconfig
from .apiserver.resources import ResourceTypes
from .apiserver.server import ApiServer
from .apiserver.store import Store
from .clock import RealTimeClock, VirtualClock, make_clock
from .controllers import Controllers
from .host import Host
from .kubelet import Kubelet
from .node import GPU_RESOURCE, DeviceAllocator, GpuInventory, Node, NodeConfig
from .scheduler import Scheduler
from .workloads import WorkloadRegistry

__all__ = ["NodeConfig", "RealTimeClock", "Twin", "VirtualClock"]

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Twin:
    """One twin cluster with one GPU node; a context manager (`start` / `stop`)."""

    def __init__(self, world: Any = None, seed: int = 0, clock: str | VirtualClock | RealTimeClock = "virtual", *,
                 node: NodeConfig | None = None, hooks: list[Callable[[Twin], None]] | tuple = (),
                 port: int = 0, workdir: str | Path | None = None, watch_history: int = 20_000) -> None:
        self.seed = seed
        self.clock = make_clock(clock)
        self.config = node or NodeConfig()
        self.types = ResourceTypes()
        self.store = Store(self.types, self.clock, self.rng("store"), history=watch_history)
        self.workloads = WorkloadRegistry()
        self.inventory = GpuInventory.generate(self.config.gpu_count, self.rng("gpu-uuids"))
        self.host = Host(self.rng("pids"), self.config.cgroup_driver)
        allocator = DeviceAllocator(self.inventory, self.rng("device-plugin"), self.config.gpu_assignment)
        self.node = Node(self.config, self.inventory, self.host, allocator)
        self.crds = CrdController(self.store, self.types)
        self.scheduler = Scheduler(self.store, [self.node], self.clock)
        self.kubelet = Kubelet(self.store, self.node, self.clock, self.workloads, self.rng("kubelet"))
        self.controllers = Controllers(self.store, [self.node], self.rng("controllers"))
        self.start_hooks: list[Callable[[Twin], None]] = list(hooks)
        if world is not None:
            self.start_hooks.append(world.install if hasattr(world, "install") else world)
        self.world = world
        self.gpu: Any = None  # set by the GPU side's installer (twin/world_install.py)
        self.server = ApiServer(self.store, self.kubelet, port=port)
        self._workdir = Path(workdir) if workdir else None
        self._own_workdir = workdir is None
        self.kubeconfig_path: Path | None = None
        self.started = False

    def rng(self, purpose: str) -> random.Random:
        """A random stream per purpose, all from the one seed: adding draws in one place does
        not shift the choices made in another."""
        return random.Random(f"{self.seed}:{purpose}")

    @property
    def base_url(self) -> str:
        return self.server.base_url

    # -- life cycle -----------------------------------------------------------------------
    def start(self) -> Self:
        for ns in SYSTEM_NAMESPACES:
            self.store.create("namespaces", None, {"metadata": {"name": ns}})
        self.store.create("nodes", None, self._node_object())
        self.store.subscribe("nodes", self._on_node)
        for hook in self.start_hooks:
            hook(self)
        self.server.start()
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="stepgraph-twin-"))
        self.kubeconfig_path = write_kubeconfig(self._workdir / "kubeconfig", self.base_url)
        self.started = True
        return self

    def stop(self) -> None:
        self.server.stop()
        if isinstance(self.clock, RealTimeClock):
            self.clock.close()
        if self._own_workdir and self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
        self.started = False

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def api_client(self) -> Any:
        """A `kubernetes.client.ApiClient` for this twin (the official client, over HTTP)."""
        from kubernetes import (
            config,  # imported here: only callers that want it pay for it
        )
        return config.new_client_from_config(config_file=str(self.kubeconfig_path))

    # -- node object ----------------------------------------------------------------------
    def _node_object(self) -> dict:
        cfg = self.config
        capacity = {"cpu": cfg.cpu, "memory": cfg.memory, "pods": str(cfg.max_pods),
                    "ephemeral-storage": "1Ti", GPU_RESOURCE: str(cfg.gpu_count)}
        return {"metadata": {"name": cfg.name, "labels": dict(cfg.labels)},
                "spec": {"taints": list(cfg.taints)} if cfg.taints else {},
                "status": {"capacity": capacity, "allocatable": dict(capacity),
                           "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                           "message": "kubelet is posting ready status"}],
                           "addresses": [{"type": "InternalIP", "address": "10.224.0.4"},
                                         {"type": "Hostname", "address": cfg.name}],
                           "nodeInfo": {"kubeletVersion": "v1.31.0", "containerRuntimeVersion": "containerd://1.7.0",
                                        "operatingSystem": "linux", "architecture": "amd64",
                                        "osImage": "Ubuntu 22.04.4 LTS", "kernelVersion": "5.15.0",
                                        "machineID": "", "systemUUID": "", "bootID": "",
                                        "kubeProxyVersion": ""}}}

    def _on_node(self, etype: str, node: dict) -> None:
        """Labels and taints edited through the API steer the scheduler and DaemonSets."""
        if etype == "DELETED" or node["metadata"]["name"] != self.config.name:
            return
        self.config.labels = dict(node["metadata"].get("labels") or {})
        self.config.taints = list((node.get("spec") or {}).get("taints") or [])
        self.scheduler.retry()
        self.controllers.reconcile_daemonsets()
