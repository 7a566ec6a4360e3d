"""A `World` + a `Twin` → the GPU side running in it (devices, workloads, faults, agent, DGDs).

    twin = build_twin(load_world("examples/profiles/path-a.yaml"))
    with twin:
        twin.gpu.faults.set("agent_ignores_conflicts", True)   # or PATCH /twin/v1/faults
        twin.clock.sleep(60)

`build_twin` derives one node config per world node (name, GPU count, labels, taints, start-up
delay and the node-owned switches) and installs `WorldInstaller` as the twin's start hook. The
installer builds each node's GPU board over that node's host table and GPU inventory, with the
node's view of the fault switches (its own settings over the world's), registers the GPU
workloads (each finds its node's devices and switches by the pod's node), mirrors the node-owned
switches (CDI, GPU assignment) onto each node at every flip, mounts `/twin/v1/faults` and the
read-only `/twin/v1/gpus`, and
creates the world's namespace, agent and hostengine DaemonSets (one pod per matching node), the
DGD CRD, the operator and the DGDs — all through the in-process store.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import Twin, world_objects
from .clock import default_kind
from .devices import DeviceDirectory, NodeDevices
from .faults import Faults, NodeFaults, aiohttp_routes, api_fault_middleware
from .gpu_workloads import register_gpu_workloads
from .gpus import GpuBoard, load_sku
from .gpus import aiohttp_routes as gpu_routes
from .node import DEFAULT_LABELS, Node, NodeConfig
from .operator import Operator
from .planners import DGD_RESOURCE
from .power_agent.cli import GENERATION_ENV as AGENT_GENERATION_ENV
from .process.runtime import ContainerMatch, Program
from .world import NodeSpec, World

DGD_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "dynamographdeployments.nvidia.com"},
    "spec": {
        "group": "nvidia.com", "scope": "Namespaced",
        "names": {"plural": "dynamographdeployments", "singular": "dynamographdeployment",
                  "kind": "DynamoGraphDeployment", "listKind": "DynamoGraphDeploymentList", "shortNames": ["dgd"]},
        "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                      "subresources": {"status": {}}}],
    },
}


def node_config(world: World, spec: NodeSpec | None = None) -> NodeConfig:
    """The twin node a world node describes (default: the world's first node)."""
    spec = spec or world.nodes[0]
    switches = {**world.faults.model_dump(), **spec.faults.overrides()}
    labels = {**DEFAULT_LABELS, "kubernetes.io/hostname": spec.name, "power-test/node": world.node_label,
              "nvidia.com/gpu.count": str(spec.gpus),
              "nvidia.com/gpu.product": load_sku(spec.sku).name.replace(" ", "-"), **spec.labels}
    return NodeConfig(name=spec.name, gpu_count=spec.gpus, labels=labels,
                      taints=[{k: v for k, v in t.model_dump().items() if v != ""} for t in spec.taints],
                      cdi_mode=switches["cdi_rejects_uuid"], gpu_assignment=switches["gpu_assignment"],
                      startup_delay=world.timing.pod_startup_seconds)


def build_twin(world: World, **kwargs: Any) -> Twin:
    """A `Twin` configured and populated by `world` (kwargs go to `Twin`, e.g. `clock="real"`).
    Unless a clock is given, the world runs on `default_kind`'s (scaled for a real program)."""
    kwargs.setdefault("clock", default_kind(world.agent.program is not None))
    return Twin(world=WorldInstaller(world), seed=world.seed,
                nodes=[node_config(world, spec) for spec in world.nodes], **kwargs)


@dataclass
class GpuSide:
    """What the installer leaves on `twin.gpu` for in-process callers (targets, tests, benches):
    the switch board, the first node's `devices` and every node's in `directory`."""

    world: World
    faults: Faults
    devices: NodeDevices
    directory: DeviceDirectory
    operator: Operator | None = None


class WorldInstaller:
    def __init__(self, world: World) -> None:
        self.world = world

    def install(self, twin: Twin) -> GpuSide:
        world = self.world
        faults = Faults(world.faults.model_copy())
        directory = DeviceDirectory()
        boards: list[GpuBoard] = []
        for spec, node in zip(world.nodes, twin.nodes, strict=True):
            overrides = spec.faults.overrides()
            node_faults = NodeFaults(faults, overrides) if overrides else faults
            board = GpuBoard.build(node.name, spec.sku, list(node.inventory.uuids), node.host)
            boards.append(board)
            directory.add(NodeDevices(board, node_faults, dcgm_order=spec.dcgm_order))
            node_faults.subscribe(functools.partial(_mirror_node_switches, node))
            _mirror_node_switches(node, node_faults.as_dict())
        register_gpu_workloads(twin.workloads, directory, faults, world.agent.generation,
                               world.operator.planner_generation, agent_tick_seconds=world.timing.agent_tick_seconds,
                               worker_model_load_seconds=world.timing.worker_model_load_seconds, auth=twin.auth)
        twin.server.extra_routes.extend(aiohttp_routes(faults))
        twin.server.extra_routes.extend(gpu_routes(boards))
        twin.server.extra_middlewares.append(api_fault_middleware(faults, twin.rng("api-faults")))
        twin.processes.devices = directory
        if world.agent.program is not None:
            register_agent_program(twin, world)

        store = twin.store
        if not _exists(store, "namespaces", None, world.namespace):
            store.create("namespaces", None, world_objects.namespace(world))
        if world.hostengine.install:
            store.create("services", world.namespace, world_objects.hostengine_service(world))
            store.create("daemonsets.apps", world.namespace, world_objects.hostengine_daemonset(world))
        if world.agent.install:
            sync_agent_rbac(store, world, faults.rbac_namespace_restricted)
            faults.subscribe(lambda switches: sync_agent_rbac(store, world, switches["rbac_namespace_restricted"]))
            store.create("daemonsets.apps", world.namespace, world_objects.agent_daemonset(world))
        operator = None
        if world.operator.install:
            store.create("customresourcedefinitions.apiextensions.k8s.io", None, DGD_CRD)
            operator = Operator(store, propagate_dgd_labels=world.operator.propagate_dgd_labels)
            for dgd in world.dgds:
                store.create(DGD_RESOURCE, world.namespace, world_objects.dgd(dgd, world))
        devices = directory.get(twin.node.name)
        assert devices is not None
        side = GpuSide(world, faults, devices, directory, operator)
        twin.gpu = side
        return side


def _mirror_node_switches(node: Node, switches: dict[str, Any]) -> None:
    """CDI admission and device-plugin order belong to the node; keep them in step with its board."""
    node.config.cdi_mode = switches["cdi_rejects_uuid"]
    node.config.gpu_assignment = switches["gpu_assignment"]
    node.allocator.mode = switches["gpu_assignment"]


def sync_agent_rbac(store: Any, world: World, chart_role_is_namespaced: bool) -> None:
    """The agent's RBAC as the chart made it: a Role in its namespace when the agent is namespace-
    restricted or the chart's Role is namespaced (Finding #3: then an agent without --namespace is
    refused its cluster-wide pod list by RBAC itself), else a ClusterRole; the other scope's role
    and binding are removed, so a flip of the switch at run time changes the agent's rights."""
    namespaced = world.agent.namespace_restricted or chart_role_is_namespaced
    for resource, namespace, obj in world_objects.agent_rbac(world, not namespaced):
        if resource != "serviceaccounts":
            try:
                store.delete(resource, namespace, obj["metadata"]["name"])
            except Exception:
                pass  # not there
    for resource, namespace, obj in world_objects.agent_rbac(world, namespaced):
        if not _exists(store, resource, namespace, obj["metadata"]["name"]):
            store.create(resource, namespace, obj)


def _exists(store: Any, resource: str, namespace: str | None, name: str) -> bool:
    try:
        store.get(resource, namespace, name)
    except Exception:
        return False
    return True


def register_agent_program(twin: Twin, world: World) -> None:
    """The agent DaemonSet's container runs the world's agent program as a real process."""
    assert world.agent.program is not None
    program = Program(root=Path(world.agent.program), mount="/app", env=((AGENT_GENERATION_ENV, world.agent.generation),))
    twin.processes.register(twin.workloads, "power-agent-program",
                            ContainerMatch(pod="power-agent-*", container="power-agent"), program)
    # the program's ticks, as the twin target's session reports them (its reconciles take time)
    twin.server.extra_middlewares.append(twin.processes.reconciles.middleware(twin.auth.authenticate))
