"""The review lock (JSON) ⇄ which wording of each requirement a scenario link was last reviewed against.

    {"schema": "stepgraph-review-lock/1",
     "links": {"B5": {"8.5.7": "f02360ee79ee", "B5": "d4b78a4b7030"}}}

Keys under `links` are scenario keys (the `@id:` tag, else the pytest node id); values map
requirement ids to the content hash the reviewer saw. `stepgraph trace --lock FILE --update-lock`
accepts every current link; a link whose requirement text has changed since is *suspect*.
The lock lives in the repo next to the scenarios, so a review shows up as a diff in a PR.
"""

from __future__ import annotations

import json
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from stepgraph.dsl.reports.errors import InputError, node_position, read_text
from stepgraph.dsl.reports.results import write_atomically

LOCK_SCHEMA = "stepgraph-review-lock/1"
FIX = 'expected {"schema": "stepgraph-review-lock/1", "links": {scenario: {requirement: hash}}}; rewrite it with --update-lock'


def load_lock(path: str | Path, known_ids: set[str]) -> dict[str, dict[str, str]]:
    """Read a lock; an id that no design document defines is an error at its line."""
    path = str(path)
    if not Path(path).exists():
        return {}
    text = read_text(path, "review lock")
    try:
        json.loads(text)
        data = YAML(typ="rt").load(text)  # JSON is YAML: ruamel gives us line numbers
    except json.JSONDecodeError as exc:
        raise InputError(path, exc.lineno, f"review lock is not valid JSON ({exc.msg})", FIX, exc.colno) from None
    except (MarkedYAMLError, YAMLError):
        data = None
    if not isinstance(data, dict) or data.get("schema") != LOCK_SCHEMA or not isinstance(data.get("links"), dict):
        raise InputError(path, 1, "not a stepgraph review lock", FIX)
    lock: dict[str, dict[str, str]] = {}
    for scenario, ids in data["links"].items():
        if not isinstance(ids, dict) or not all(isinstance(h, str) for h in ids.values()):
            line, col = node_position(data, ["links", scenario])
            raise InputError(path, line, f"links of {scenario!r} are not a mapping of id → hash", FIX, col)
        for rid in ids:
            if str(rid) not in known_ids:
                line, col = node_position(data, ["links", scenario, rid])
                raise InputError(path, line, f"unknown requirement id {rid!r} (scenario {scenario!r})",
                                 "fix the id, or drop the entry and re-review with --update-lock", col)
        lock[str(scenario)] = {str(rid): str(h) for rid, h in ids.items()}
    return lock


def write_lock(path: str | Path, links: dict[str, dict[str, str]]) -> None:
    write_atomically(path, json.dumps({"schema": LOCK_SCHEMA, "links": links}, indent=1) + "\n")
