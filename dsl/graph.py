"""Feature IR → step graphs (one per scenario): nodes with typed params and source locations;
order, data and compensation edges; needs, effects and design refs; JSON, Mermaid and DOT output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .ir import Feature, JointCheck, Scenario, StepCall
from .phrases import Window


@dataclass
class Node:
    id: str
    step: str
    text: str
    params: dict[str, Any]
    location: str
    phase: str  # background | scenario
    binds: str | None = None
    reads: list[str] = field(default_factory=list)
    within: str | None = None
    throughout: str | None = None
    together: str | None = None  # checks judged together in one window share this (their group's first node)
    effects: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)


@dataclass
class Edge:
    source: str
    target: str
    kind: str  # order | data | compensation
    label: str = ""


@dataclass
class StepGraph:
    feature: str
    scenario: str
    id: str | None
    design: list[str]
    needs: list[str]
    nodes: list[Node]
    edges: list[Edge]

    def to_json(self) -> dict[str, Any]:
        return {
            "feature": self.feature,
            "scenario": self.scenario,
            "id": self.id,
            "design": self.design,
            "needs": self.needs,
            "nodes": [vars(n) for n in self.nodes],
            "edges": [vars(e) for e in self.edges],
        }


def build_graph(feature: Feature, scenario: Scenario) -> StepGraph:
    nodes: list[Node] = []
    edges: list[Edge] = []
    producers: dict[str, str] = {}
    calls: list[tuple[str, StepCall, Window | None, str | None]] = []  # phase, call, its window, its joint group
    for phase, steps in (("background", feature.background), ("scenario", scenario.steps)):
        for step in steps:
            if isinstance(step, JointCheck):
                calls += [(phase, call, step.window, f"n{len(calls)}") for call in step.checks]
            else:
                calls.append((phase, step, step.window, None))
    compensated: list[str] = []
    for index, (phase, call, window, together) in enumerate(calls):
        node = Node(
            id=f"n{index}",
            step=call.step_id,
            text=call.text(),
            params=call.params.model_dump(mode="json"),
            location=str(call.location),
            phase=phase,
            binds=call.bind_as,
            reads=call.reads,
            within=str(window.duration) if window and window.mode == "within" else None,
            throughout=str(window.duration) if window and window.mode == "throughout" else None,
            together=together,
            effects=sorted(call.decl.effects),
            needs=sorted(call.decl.needs),
        )
        if nodes:
            edges.append(Edge(nodes[-1].id, node.id, "order"))
        for name in node.reads:
            if name in producers:
                edges.append(Edge(producers[name], node.id, "data", f"${name}"))
        if call.bind_as:
            producers[call.bind_as] = node.id
        if call.decl.compensation is not None:
            compensated.append(node.id)
        nodes.append(node)
    if compensated:
        nodes.append(Node(id="teardown", step="teardown", text="compensations run LIFO", params={}, location="", phase="teardown"))
        for node_id in reversed(compensated):
            edges.append(Edge(node_id, "teardown", "compensation", "undo"))
    return StepGraph(
        feature.name,
        scenario.name,
        feature.scenario_id(scenario),
        list(feature.design_ids(scenario)),
        sorted(feature.needs(scenario)),
        nodes,
        edges,
    )


def graphs(feature: Feature) -> list[StepGraph]:
    return [build_graph(feature, s) for s in feature.scenarios]


def to_json_text(gs: list[StepGraph]) -> str:
    return json.dumps([g.to_json() for g in gs], indent=2) + "\n"


def _label(text: str) -> str:
    return text.replace('"', "'")


def to_mermaid(gs: list[StepGraph]) -> str:
    lines = ["flowchart TD"]
    for i, g in enumerate(gs):
        lines.append(f'  subgraph s{i}["{_label(g.scenario)}"]')
        for n in g.nodes:
            lines.append(f'    s{i}_{n.id}["{_label(n.step)}: {_label(n.text)}"]')
        for e in g.edges:
            arrow = {"order": "-->", "data": "-.->", "compensation": "==>"}[e.kind]
            label = f"|{_label(e.label)}|" if e.label else ""
            lines.append(f"    s{i}_{e.source} {arrow}{label} s{i}_{e.target}")
        lines.append("  end")
    return "\n".join(lines) + "\n"


def to_dot(gs: list[StepGraph]) -> str:
    def q(text: str) -> str:
        return json.dumps(text)

    lines = ["digraph stepgraph {", "  rankdir=TB;", "  node [shape=box];"]
    for i, g in enumerate(gs):
        lines.append(f"  subgraph cluster_{i} {{ label={q(g.scenario)};")
        for n in g.nodes:
            lines.append(f"    s{i}_{n.id} [label={q(f'{n.step}: {n.text}')}];")
        for e in g.edges:
            style = {"order": "solid", "data": "dashed", "compensation": "bold"}[e.kind]
            lines.append(f"    s{i}_{e.source} -> s{i}_{e.target} [style={style}, label={q(e.label)}];")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
