"""A `World` + a `Twin` → the GPU side running in it (devices, workloads, faults, agent, DGDs).

    twin = build_twin(load_world("examples/profiles/path-a.yaml"))
    with twin:
        twin.gpu.faults.set("agent_ignores_conflicts", True)   # or PATCH /twin/v1/faults
        twin.clock.sleep(60)

`build_twin` derives the node config from the world (name, GPU count, labels, start-up delay and
the node-owned switches) and installs `WorldInstaller` as the twin's start hook. The installer
builds the node's GPU board over the twin's host table and GPU inventory, registers the GPU
workloads, mirrors the node-owned fault switches (CDI, GPU assignment) onto the node at every
flip, mounts `/twin/v1/faults`, and creates the world's namespace, agent and hostengine
DaemonSets, the DGD CRD, the operator and the DGDs — all through the in-process store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import Twin, world_objects
from .devices import DeviceDirectory, NodeDevices
from .faults import Faults, aiohttp_routes
from .gpu_workloads import register_gpu_workloads
from .gpus import GpuBoard
from .node import DEFAULT_LABELS, NodeConfig
from .operator import Operator
from .planners import DGD_RESOURCE
from .world import World

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


class MultiNodeWorld(ValueError):
    """The twin cluster runs one node; a world with more is for the benchmark only."""


def node_config(world: World) -> NodeConfig:
    spec = world.nodes[0]
    labels = {**DEFAULT_LABELS, "kubernetes.io/hostname": spec.name, "power-test/node": world.node_label,
              "nvidia.com/gpu.count": str(spec.gpus), **spec.labels}
    return NodeConfig(name=spec.name, gpu_count=spec.gpus, labels=labels,
                      cdi_mode=world.faults.cdi_rejects_uuid, gpu_assignment=world.faults.gpu_assignment,
                      startup_delay=world.timing.pod_startup_seconds)


def build_twin(world: World, **kwargs: Any) -> Twin:
    """A `Twin` configured and populated by `world` (kwargs go to `Twin`, e.g. `clock="real"`)."""
    if len(world.nodes) != 1:
        raise MultiNodeWorld(f"world {world.name!r} has {len(world.nodes)} nodes; the twin cluster runs exactly one")
    return Twin(world=WorldInstaller(world), seed=world.seed, node=node_config(world), **kwargs)


@dataclass
class GpuSide:
    """What the installer leaves on `twin.gpu` for in-process callers (targets, tests, benches)."""

    world: World
    faults: Faults
    devices: NodeDevices
    directory: DeviceDirectory
    operator: Operator | None = None


class WorldInstaller:
    def __init__(self, world: World) -> None:
        self.world = world

    def install(self, twin: Twin) -> GpuSide:
        world, spec = self.world, self.world.nodes[0]
        faults = Faults(world.faults.model_copy())
        board = GpuBoard.build(twin.node.name, spec.sku, list(twin.inventory.uuids), twin.host)
        devices = NodeDevices(board, faults, dcgm_order=spec.dcgm_order)
        directory = DeviceDirectory()
        directory.add(devices)
        register_gpu_workloads(twin.workloads, directory, faults, world.agent.generation,
                               world.operator.planner_generation, agent_tick_seconds=world.timing.agent_tick_seconds,
                               worker_model_load_seconds=world.timing.worker_model_load_seconds)
        faults.subscribe(lambda switches: _mirror_node_switches(twin, switches))
        _mirror_node_switches(twin, faults.as_dict())
        twin.server.extra_routes.extend(aiohttp_routes(faults))

        store = twin.store
        if not _exists(store, "namespaces", None, world.namespace):
            store.create("namespaces", None, world_objects.namespace(world))
        if world.hostengine.install:
            store.create("services", world.namespace, world_objects.hostengine_service(world))
            store.create("daemonsets.apps", world.namespace, world_objects.hostengine_daemonset(world))
        if world.agent.install:
            store.create("daemonsets.apps", world.namespace, world_objects.agent_daemonset(world))
        operator = None
        if world.operator.install:
            store.create("customresourcedefinitions.apiextensions.k8s.io", None, DGD_CRD)
            operator = Operator(store, propagate_dgd_labels=world.operator.propagate_dgd_labels)
            for dgd in world.dgds:
                store.create(DGD_RESOURCE, world.namespace, world_objects.dgd(dgd, world))
        side = GpuSide(world, faults, devices, directory, operator)
        twin.gpu = side  # type: ignore[attr-defined]
        return side


def _mirror_node_switches(twin: Twin, switches: dict[str, Any]) -> None:
    """CDI admission and device-plugin order belong to the node; keep them in step with the board."""
    twin.node.config.cdi_mode = switches["cdi_rejects_uuid"]
    twin.node.config.gpu_assignment = switches["gpu_assignment"]
    twin.node.allocator.mode = switches["gpu_assignment"]


def _exists(store: Any, resource: str, namespace: str | None, name: str) -> bool:
    try:
        store.get(resource, namespace, name)
    except Exception:  # noqa: BLE001 — ApiError 404 is the normal "no"
        return False
    return True
