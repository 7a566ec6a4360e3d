"""`Twin`: one cluster wired together (see the package's docstring for how to use it)."""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

from .apiserver.auth import Auth, default_key
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
from .process.runtime import ProcessRuntime
from .runtimes import NodeRuntimes
from .scheduler import Scheduler
from .tls import TwinCA
from .workloads import WorkloadRegistry

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Twin:
    """One twin cluster of GPU nodes; a context manager (`start` / `stop`)."""

    def __init__(self, world: Any = None, seed: int = 0, clock: str | VirtualClock | RealTimeClock = "virtual", *,
                 node: NodeConfig | None = None, nodes: list[NodeConfig] | tuple = (),
                 hooks: list[Callable[[Twin], None]] | tuple = (),
                 port: int = 0, workdir: str | Path | None = None, watch_history: int = 20_000) -> None:
        if node is not None and nodes:
            raise ValueError("give either node= or nodes=, not both")
        self.seed = seed
        self.clock = make_clock(clock)
        self.configs: list[NodeConfig] = list(nodes) or [node or NodeConfig()]
        names = [c.name for c in self.configs]
        if len(set(names)) != len(names):
            raise ValueError(f"node names must be unique, got {names}")
        self.types = ResourceTypes()
        self.store = Store(self.types, self.clock, self.rng("store"), history=watch_history)
        self.workloads = WorkloadRegistry()
        self.nodes: list[Node] = []
        self.kubelets: dict[str, Kubelet] = {}
        pod_ips: dict[str, str] = {}  # one pod network: an IP is unique across the nodes
        for i, cfg in enumerate(self.configs):
            # The first node draws from the same streams as a one-node twin, so adding nodes
            # leaves its UUIDs, PIDs and choices as they were.
            tag = "" if i == 0 else f"{cfg.name}:"
            inventory = GpuInventory.generate(cfg.gpu_count, self.rng(tag + "gpu-uuids"))
            host = Host(self.rng(tag + "pids"), cfg.cgroup_driver)
            allocator = DeviceAllocator(inventory, self.rng(tag + "device-plugin"), cfg.gpu_assignment)
            twin_node = Node(cfg, inventory, host, allocator)
            self.nodes.append(twin_node)
            self.kubelets[twin_node.name] = Kubelet(self.store, twin_node, self.clock, self.workloads, self.rng(tag + "kubelet"),
                                               host_ip=node_ip(i), pod_ips=pod_ips)
        self.node = self.nodes[0]
        self.config = self.node.config
        self.inventory, self.host, self.kubelet = self.node.inventory, self.node.host, self.kubelets[self.node.name]
        self.crds = CrdController(self.store, self.types)
        self.scheduler = Scheduler(self.store, self.nodes, self.clock)
        self.controllers = Controllers(self.store, self.nodes, self.rng("controllers"), root_ca=lambda: self.ca.ca_pem)
        self.start_hooks: list[Callable[[Twin], None]] = list(hooks)
        if world is not None:
            self.start_hooks.append(world.install if hasattr(world, "install") else world)
        self.world = world
        self.gpu: Any = None  # set by the GPU side's installer (twin/world_install.py)
        self.ca = TwinCA()
        # process containers: real child programs (none unless a world or test registers one)
        self.processes = ProcessRuntime(self.store, self.clock, api_server=self._api_server_for_pods)
        self.processes.token_for = self.service_account_token
        runtime = self.kubelet if len(self.nodes) == 1 else NodeRuntimes(self.kubelets)
        self.auth = Auth(self.store, default_key(str(seed).encode()))
        self.server = ApiServer(self.store, runtime, port=port, auth=self.auth)
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
        for i, node in enumerate(self.nodes):
            self.store.create("nodes", None, self._node_object(node.config, node_ip(i)))
        self.store.subscribe("nodes", self._on_node)
        for hook in self.start_hooks:
            hook(self)
        self.server.start()
        if self._workdir is None:
            # The pid in the name lets a later run remove the folder if this process is killed.
            self._workdir = Path(tempfile.mkdtemp(prefix=f"stepgraph-twin-{os.getpid()}-"))
        self.kubeconfig_path = write_kubeconfig(self._workdir / "kubeconfig", self.base_url)
        self.started = True
        return self

    def stop(self) -> None:
        self.processes.close()  # first: no program outlives its twin, whatever fails below
        self.server.stop()
        if isinstance(self.clock, RealTimeClock):
            self.clock.close()
        if self._own_workdir and self._workdir is not None:
            try:
                shutil.rmtree(self._workdir)
            except FileNotFoundError:
                pass
            except OSError as err:  # reported, not swallowed
                sys.stderr.write(f"twin: could not remove its work folder {self._workdir}: {err}\n")
        self.started = False

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def service_account_token(self, pod: dict) -> str:
        """The token a pod's service-account files hold: over HTTP it is that service account,
        with the rights RBAC gives it (the kubeconfig's credential stays cluster admin)."""
        return self.auth.token_for_pod(pod)

    def _api_server_for_pods(self) -> tuple[int, str]:
        """The HTTPS port pods reach the API server on (started at the first ask) and its CA, PEM."""
        return self.server.serve_tls(self.ca.server_context()) if not self.server.https_port \
            else self.server.https_port, self.ca.ca_pem

    def api_client(self) -> Any:
        """A `kubernetes.client.ApiClient` for this twin (the official client, over HTTP)."""
        from kubernetes import (
            config,  # imported here: only callers that want it pay for it
        )
        return config.new_client_from_config(config_file=str(self.kubeconfig_path))

    # -- node objects ---------------------------------------------------------------------
    @staticmethod
    def _node_object(cfg: NodeConfig, ip: str) -> dict:
        capacity = {"cpu": cfg.cpu, "memory": cfg.memory, "pods": str(cfg.max_pods),
                    "ephemeral-storage": "1Ti", GPU_RESOURCE: str(cfg.gpu_count)}
        return {"metadata": {"name": cfg.name, "labels": dict(cfg.labels)},
                "spec": {"taints": list(cfg.taints)} if cfg.taints else {},
                "status": {"capacity": capacity, "allocatable": dict(capacity),
                           "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                           "message": "kubelet is posting ready status"}],
                           "addresses": [{"type": "InternalIP", "address": ip},
                                         {"type": "Hostname", "address": cfg.name}],
                           "nodeInfo": {"kubeletVersion": "v1.31.0", "containerRuntimeVersion": "containerd://1.7.0",
                                        "operatingSystem": "linux", "architecture": "amd64",
                                        "osImage": "Ubuntu 22.04.4 LTS", "kernelVersion": "5.15.0",
                                        "machineID": "", "systemUUID": "", "bootID": "",
                                        "kubeProxyVersion": ""}}}

    def _on_node(self, etype: str, node: dict) -> None:
        """Labels and taints edited through the API steer the scheduler and DaemonSets."""
        kubelet = self.kubelets.get(node["metadata"]["name"])
        if etype == "DELETED" or kubelet is None:
            return
        config = kubelet.node.config
        config.labels = dict(node["metadata"].get("labels") or {})
        config.taints = list((node.get("spec") or {}).get("taints") or [])
        self.scheduler.retry()
        self.controllers.reconcile_daemonsets()


def node_ip(index: int) -> str:
    """The InternalIP of the twin's `index`-th node (the first is 10.224.0.4, as before)."""
    n = 4 + index
    return f"10.224.{n // 256}.{n % 256}"
