"""Per-node runs: `--stepgraph-nodes SELECTOR` → every scenario once per matching node, bound to it.

The target lists the nodes a label selector matches (`target.nodes(selector)`); each scenario
item is parametrized by node (`test_x[gpu-node-3]`) and marked `xdist_group(<node>)`; under
pytest-xdist (`-n N`) the controller schedules whole nodes (`NodeScheduling`): all scenarios of one
node run on one worker, one after another — never two on one node at once — while different
nodes run in parallel. (xdist's own `--dist loadgroup` does that by rewriting node ids, which
pytest 9.2 no longer lets it do, so grouping silently stops — pytest-xdist issue #1386; the
scheduler here reads the node from the test id instead.) A scenario bound to a node
sees the target session through that node (`facts["node"]`, and `pin_node`, which makes the steps
pin the pods they create to it) with an API-client cache of its own, and its result is recorded
for the column `<world>, node <node>` of the trace.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from .collect import ScenarioModule
from .reports.environment import record_scenario_facts
from .target import Target, TargetConfigError, TargetSession

NODES_ENV = "STEPGRAPH_NODES"
NODE_LIST = pytest.StashKey[list[str]]()


def add_option(group: Any) -> None:
    group.addoption(
        "--stepgraph-nodes",
        dest="stepgraph_nodes",
        default=os.environ.get(NODES_ENV) or None,
        metavar="SELECTOR",
        help=f"run every scenario once per node matching this label selector (default: ${NODES_ENV})",
    )


def node_names(target: Target, selector: str) -> list[str]:
    """The target's nodes matching `selector`, in the target's order; TargetConfigError if none."""
    lister = getattr(target, "nodes", None)
    if lister is None:
        raise TargetConfigError(f"target {target.name!r} cannot run per node (it lists no nodes) — drop --nodes")
    names = list(lister(selector))
    if not names:
        raise TargetConfigError(f"no node of target {target.name!r} matches --nodes {selector!r} — check the labels")
    return names


def parametrize(metafunc: pytest.Metafunc, target_of: Any) -> None:
    """Parametrize a scenario function by node (only scenario functions, only with the option)."""
    selector = metafunc.config.getoption("stepgraph_nodes")
    if not selector or not isinstance(metafunc.definition.parent, ScenarioModule):
        return
    config = metafunc.config
    if NODE_LIST not in config.stash:
        try:
            config.stash[NODE_LIST] = node_names(target_of(config), selector)
        except TargetConfigError as exc:
            pytest.exit(f"stepgraph: {exc}", returncode=2)
    if "stepgraph_node" not in metafunc.fixturenames:
        metafunc.fixturenames.append("stepgraph_node")
    metafunc.parametrize("stepgraph_node", [pytest.param(n, id=n, marks=pytest.mark.xdist_group(n))
                                            for n in config.stash[NODE_LIST]])


class NodeSession:
    """A target session seen from one node: the same cluster, clock and capabilities; the node's
    name in `facts["node"]` and `facts["pin_node"]` set, so created pods are pinned to it."""

    def __init__(self, session: TargetSession, node: str) -> None:
        self._session = session
        self.node = node
        self.facts = {**session.facts, "node": node, "pin_node": True}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def column(world: str | None, node: str) -> str:
    """The world name a node-bound scenario's result is recorded under (one trace column per node)."""
    return f"{world}, node {node}" if world else f"node {node}"


def bound_node(item: pytest.Item) -> str | None:
    """The node a scenario item is bound to (its `stepgraph_node` parameter); None unless the run is per node."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("stepgraph_node") if callspec is not None else None


def record_node(item: pytest.Item, node: str, target: Target | None, facts: dict[str, Any]) -> None:
    """Record a node-bound item's node and column before it runs — also when it is skipped."""
    # the session's world once it runs; before that the target's configured world (if it has one)
    world = facts.get("world") or getattr(getattr(target, "world", None), "name", None)
    record_scenario_facts(item, world=column(world, node), fingerprint={"node": node})


def node_of(nodeid: str, nodes: list[str]) -> str | None:
    """The node a test id is bound to: its parameter id is, or ends with, the node's name."""
    params = nodeid[nodeid.rfind("[") + 1:-1] if nodeid.endswith("]") else ""
    found = [n for n in nodes if params == n or params.endswith(f"-{n}")]
    return max(found, key=len) if found else None


def make_scheduler(config: pytest.Config, log: Any, target_of: Any) -> Any:
    """An xdist scheduler that hands out whole nodes (None when the run is not per node)."""
    selector = config.getoption("stepgraph_nodes")
    if not selector:
        return None
    from xdist.scheduler import LoadScopeScheduling  # xdist is loaded: this hook is its own

    try:
        nodes = node_names(target_of(config), selector)
    except TargetConfigError as exc:
        pytest.exit(f"stepgraph: {exc}", returncode=2)

    class NodeScheduling(LoadScopeScheduling):
        """Load scheduling whose unit of work is one node's scenarios."""

        def _split_scope(self, nodeid: str) -> str:
            node = node_of(nodeid, nodes)
            return f"node:{node}" if node is not None else nodeid

    return NodeScheduling(config, log)
