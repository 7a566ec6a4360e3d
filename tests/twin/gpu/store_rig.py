"""The twin's real store (no HTTP) with the DGD CRD type, plus the Path A world's DGDs."""

from __future__ import annotations

import random

from stepgraph.twin import world_objects
from stepgraph.twin.apiserver.resources import ResourceType, ResourceTypes
from stepgraph.twin.apiserver.store import Store
from stepgraph.twin.clock import VirtualClock
from stepgraph.twin.faults import Faults
from stepgraph.twin.operator import Operator
from stepgraph.twin.planners import DGD_RESOURCE, Planner, PlannerConfig
from stepgraph.twin.world import load_world, profile


class PathA:
    def __init__(self, faults: Faults | None = None, planner_generation: str = "pod-patching", propagate: bool = True):
        types = ResourceTypes()
        types.add(ResourceType("nvidia.com", ("v1alpha1",), "dynamographdeployments", "DynamoGraphDeployment", True,
                               builtin=False))
        self.store = Store(types, VirtualClock(), random.Random(1))
        self.world = load_world(profile("path-a"))
        self.world.operator.planner_generation = planner_generation
        self.ns = self.world.namespace
        self.faults = faults or Faults()
        self.store.create("namespaces", None, world_objects.namespace(self.world))
        self.operator = Operator(self.store, propagate_dgd_labels=propagate)
        self.logs: dict[str, list[str]] = {}
        self.planners: dict[str, Planner] = {}
        for spec in self.world.dgds:
            body = world_objects.dgd(spec, self.world)
            self.store.create(DGD_RESOURCE, self.ns, body)
            planner_pod = self.pods(dgd=spec.name, component_type="planner")[0]
            container = planner_pod["spec"]["containers"][0]
            config = PlannerConfig.from_args(container["command"] + container["args"])
            self.logs[spec.name] = []
            self.planners[spec.name] = Planner(self.store, self.ns, spec.name, config, self.logs[spec.name].append,
                                               self.faults, planner_generation)

    def pods(self, dgd=None, component_type=None):
        sel = []
        if dgd:
            sel.append(f"nvidia.com/dynamo-graph-deployment-name={dgd}")
        if component_type:
            sel.append(f"nvidia.com/dynamo-component-type={component_type}")
        return self.store.list("pods", self.ns, label_selector=",".join(sel) or None)

    def tick_all(self):
        for planner in self.planners.values():
            planner.tick()

    def annotations(self):
        return {p["metadata"]["name"]: (p["metadata"].get("annotations") or {}).get("dynamo.nvidia.com/gpu-power-limit")
                for p in self.pods(component_type="worker")}
