"""Per-node results → one results document: how a runner pod hands its results back, and how a
node that produced none becomes a red column with its reason.

The runner pod (`stepgraph fleet node`) prints its results document at the end of its log, as one
line of JSON between two marker lines. Pod logs were chosen over a per-node ConfigMap: they need
no write permission beyond what the steps need, leave no object behind, and carry the run's own
output too; their limit (the kubelet rotates a container log at 10 MiB by default) is far above
a catalog's results (~100 KiB).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stepgraph.dsl.compiler import compile_paths
from stepgraph.dsl.nodes import column
from stepgraph.dsl.registry import REGISTRY

BEGIN = "----- stepgraph fleet results (JSON, one line) -----"
END = "----- end of stepgraph fleet results -----"


def framed(document: dict[str, Any]) -> str:
    """The lines a runner prints after its run: the markers around the compact JSON document."""
    return f"{BEGIN}\n{json.dumps(document, separators=(',', ':'))}\n{END}\n"


def from_log(text: str) -> dict[str, Any] | None:
    """The results document a runner's log ends with, or None if it printed none (or a broken one)."""
    lines = text.splitlines()
    try:
        start = len(lines) - 1 - lines[::-1].index(BEGIN)
    except ValueError:
        return None
    if start + 2 >= len(lines) or lines[start + 2] != END:
        return None
    try:
        document = json.loads(lines[start + 1])
    except json.JSONDecodeError:
        return None
    return document if isinstance(document, dict) and isinstance(document.get("scenarios"), list) else None


def bind_to_node(document: dict[str, Any], node: str) -> list[dict[str, Any]]:
    """A node's records, each under that node's trace column and fingerprinted with it."""
    records = []
    for record in document["scenarios"]:
        records.append({**record, "world": column(record.get("world"), node),
                        "fingerprint": {**record.get("fingerprint", {}), "node": node},
                        "nodeid": f"{record['nodeid']}[{node}]"})
    return records


def failed_node(paths: list[Path], node: str, reason: str, target: str = "live") -> list[dict[str, Any]]:
    """Records for a node that returned no results: every scenario of `paths`, failed with `reason`,
    so each requirement the node should have proved shows red in that node's column."""
    REGISTRY.load_entry_points()
    files, _ = compile_paths(paths, REGISTRY)
    records = []
    for f in files:
        if f.feature is None:
            continue
        feature = f.feature
        feature_tags = sorted(feature.tags.as_gherkin())
        for s in feature.scenarios:
            tags = sorted(set(feature_tags) | set(s.tags.as_gherkin()))
            records.append({
                "nodeid": f"{f.display}::{s.name}[{node}]",
                "id": feature.scenario_id(s), "design": list(feature.design_ids(s)),
                "name": s.name, "keyword": "Scenario", "line": s.location.line, "tags": tags,
                "feature": {"name": feature.name, "file": f.display, "line": feature.location.line,
                            "keyword": "Feature", "tags": feature_tags},
                "outcome": "error", "reason": f"node {node}: {reason}", "duration_s": 0.0,
                "phases": {"setup": {"outcome": "failed", "duration_s": 0.0}}, "steps": [],
                "target": target, "world": column(None, node), "seed": None,
                "fingerprint": {"node": node}, "worker": None,
            })
    return records
