"""The review lock (JSON) ⇄ which wording of each requirement a scenario link was last reviewed against.

    {"schema": "stepgraph-review-lock/1",
     "documents": {
       "docs/design/multi-tenant-test-plan.md": {"B5": {"8.5.7": "a0c1…", "B5": "d4b7…"}}}}

Per design document (its path relative to the lock file, so the lock reads the same from any
working directory): scenario keys (the `@id:` tag, else the pytest node id) → requirement id →
the content hash the reviewer accepted. `stepgraph trace --lock FILE --update-lock` accepts every
current link; a link whose requirement text has changed since is *suspect*. The lock lives in the
repo next to the scenarios, so a review shows up as a diff in a PR. Documents in the lock that a
trace was not given are kept by --update-lock and otherwise ignored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from stepgraph.dsl.reports.design import DesignDoc
from stepgraph.dsl.reports.errors import InputError, node_position, parse_json, read_text
from stepgraph.dsl.reports.results import write_atomically

LOCK_SCHEMA = "stepgraph-review-lock/1"
FIX = ('expected {"schema": "stepgraph-review-lock/1", "documents": {doc: {scenario: {requirement: hash}}}}; '
       "fix it, or delete it and re-review every link with --update-lock")
Lock = dict[str, dict[str, dict[str, str]]]  # document → scenario → requirement id → hash


def _key(lock_path: str | Path, doc_path: str) -> str:
    """A document's name in the lock: its path relative to the lock file's folder."""
    return Path(os.path.relpath(Path(doc_path).resolve(), Path(lock_path).resolve().parent)).as_posix()


def _read(path: str) -> Any:
    text = read_text(path, "review lock")
    parse_json(text, path, "review lock", FIX, says_truncated=False)
    try:
        return YAML(typ="rt").load(text)  # JSON is YAML: ruamel gives us line numbers
    except YAMLError:
        raise InputError(path, 1, "review lock could not be read as JSON", FIX) from None


def load_lock(path: str | Path, docs: list[DesignDoc]) -> Lock:
    """Read a lock for these documents (keyed by doc.path); an id a document does not define is an error at its line."""
    path = str(path)
    if not Path(path).exists():
        return {}
    data = _read(path)
    if not isinstance(data, dict) or data.get("schema") != LOCK_SCHEMA or not isinstance(data.get("documents"), dict):
        raise InputError(path, 1, "not a stepgraph review lock", FIX)
    by_key = {_key(path, doc.file or doc.path): doc for doc in docs}
    lock: Lock = {}
    for doc_key, scenarios in data["documents"].items():
        doc = by_key.get(str(doc_key))
        if doc is None:
            continue
        if not isinstance(scenarios, dict):
            line, col = node_position(data, ["documents", doc_key])
            raise InputError(path, line, f"entry for {doc_key!r} is not a mapping of scenario → links", FIX, col)
        for scenario, ids in scenarios.items():
            if not isinstance(ids, dict) or not all(isinstance(h, str) for h in ids.values()):
                line, col = node_position(data, ["documents", doc_key, scenario])
                raise InputError(path, line, f"links of {scenario!r} are not a mapping of id → hash", FIX, col)
            for rid in ids:
                if str(rid) not in doc.requirements:
                    line, col = node_position(data, ["documents", doc_key, scenario, rid])
                    raise InputError(path, line, f"unknown requirement id {rid!r} in {doc_key} (scenario {scenario!r})",
                                     "fix the id, or drop the entry and re-review with --update-lock", col)
            lock.setdefault(doc.path, {})[str(scenario)] = {str(rid): str(h) for rid, h in ids.items()}
    return lock


def write_lock(path: str | Path, entries: Lock, docs: Sequence[DesignDoc] = ()) -> None:
    """Accept `entries` (keyed by doc.path), keeping documents of the existing lock this trace did not cover.
    A document of `docs` is found where it was read from (its `file`)."""
    files = {doc.path: doc.file or doc.path for doc in docs}
    documents: dict[str, Any] = {}
    if Path(path).exists():
        existing = _read(str(path))
        if isinstance(existing, dict) and isinstance(existing.get("documents"), dict):
            documents = {str(k): v for k, v in existing["documents"].items()}
    documents.update({_key(path, files.get(doc_path, doc_path)): links for doc_path, links in entries.items()})
    text = json.dumps({"schema": LOCK_SCHEMA, "documents": dict(sorted(documents.items()))}, indent=1)
    write_atomically(path, text + "\n")
