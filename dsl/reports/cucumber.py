"""Results document → Cucumber JSON, with every step and the true status of each.

Unlike pytest-bdd's `--cucumberjson`: undefined steps are `undefined` (not `passed`), skipped
scenarios are present with all their steps `skipped` and the skip reason as each one's error
message, errors in setup/teardown appear as failed `before`/`after` hooks, and it works under
pytest-xdist.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from stepgraph.dsl.reports.results import write_atomically

NANOS = 1_000_000_000


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _tags(tags: list[str], line: int) -> list[dict[str, Any]]:
    return [{"name": f"@{tag}", "line": line} for tag in tags]


def _hook(phase: dict[str, Any] | None, where: str) -> list[dict[str, Any]]:
    if not phase or phase["outcome"] != "failed":
        return []
    return [{"match": {"location": where},
             "result": {"status": "failed", "duration": int(phase["duration_s"] * NANOS),
                        "error_message": phase.get("message", "")}}]


def _element(record: dict[str, Any]) -> dict[str, Any]:
    steps = []
    for step in record["steps"]:
        result: dict[str, Any] = {"status": step["status"], "duration": int(step["duration_s"] * NANOS)}
        if step.get("error"):
            result["error_message"] = step["error"]
        elif step["status"] == "skipped" and record["outcome"] == "skipped" and record["reason"]:
            result["error_message"] = record["reason"]  # a scenario skipped before it ran: say why on every step
        steps.append({"keyword": step["keyword"] + " ", "name": step["name"], "line": step["line"],
                      "match": {"location": f"{record['feature']['file']}:{step['line']}"}, "result": result})
    element = {
        "id": f"{_slug(record['feature']['name'])};{_slug(record['name'])}",
        "keyword": record.get("keyword") or "Scenario", "type": "scenario",
        "name": record["name"], "line": record["line"], "description": "",
        "tags": _tags([t for t in record["tags"] if t not in record["feature"].get("tags", [])], max(record["line"] - 1, 1)),
        "steps": steps,
    }
    phases = record["phases"]
    element["before"] = _hook(phases.get("setup"), "setup")
    element["after"] = _hook(phases.get("teardown"), "teardown")
    return element


def render(document: dict[str, Any]) -> list[dict[str, Any]]:
    features: dict[str, dict[str, Any]] = {}
    for record in document["scenarios"]:
        feature = record["feature"]
        entry = features.setdefault(feature["file"], {
            "uri": feature["file"], "id": _slug(feature["name"]), "keyword": feature.get("keyword") or "Feature",
            "name": feature["name"], "line": feature["line"], "description": "",
            "tags": _tags(feature.get("tags", []), max(feature["line"] - 1, 1)), "elements": [],
        })
        entry["elements"].append(_element(record))
    return list(features.values())


def write(document: dict[str, Any], path: str | Path) -> None:
    write_atomically(path, json.dumps(render(document), indent=1, ensure_ascii=False) + "\n")
