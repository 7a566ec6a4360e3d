"""Scenario records ⇄ the results file (`stepgraph-results/1`, schema in results.schema.json).

`assemble` builds the document the plugin writes; `load` reads one back for `stepgraph trace`,
turning unreadable, truncated or malformed files into `file:line` errors.
"""

from __future__ import annotations

import json
import os
import secrets
from collections import Counter
from datetime import datetime
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import fastjsonschema
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from stepgraph.dsl.reports.errors import InputError, node_position, parse_json, read_text

SCHEMA_ID = "stepgraph-results/1"
OUTCOMES = ("passed", "failed", "skipped", "undefined", "error")


@cache
def schema() -> dict[str, Any]:
    return json.loads(files("stepgraph.dsl.reports").joinpath("results.schema.json").read_text("utf-8"))


@cache
def _validator() -> Any:
    """Compiled once: fastjsonschema validates 1,000 records in ~25 ms where jsonschema takes ~500 ms."""
    return fastjsonschema.compile(schema())


def load_validator() -> None:
    """Compile the schema's validator now rather than at the first `load`."""
    _validator()


def assemble(records: list[dict[str, Any]], *, started_at: datetime, duration_s: float, args: list[str],
             collection_errors: list[dict[str, str]]) -> dict[str, Any]:
    records = sorted(records, key=lambda r: r["nodeid"])  # xdist finishes in any order; files should not
    counts = Counter(r["outcome"] for r in records)
    environments = []
    for r in records:
        env = {"target": r["target"], "world": r["world"], "seed": r["seed"], "fingerprint": r["fingerprint"]}
        if env not in environments:
            environments.append(env)
    return {
        "schema": SCHEMA_ID,
        "run": {"started_at": started_at.isoformat(timespec="seconds"), "duration_s": round(duration_s, 3),
                "args": args, "environments": environments, "collection_errors": collection_errors},
        "summary": {outcome: counts.get(outcome, 0) for outcome in OUTCOMES} | {"total": len(records)},
        "scenarios": records,
    }


def write_atomically(path: str | Path, text: str) -> None:
    """Write all or nothing: a crash mid-write never leaves a truncated report behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A unique name opened with "x" (not mkstemp, which makes 0600 files): the report gets the mode
    # every file gets under the umask, so CI artifact readers running as another user can read it.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        with open(tmp, "x", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write(document: dict[str, Any], path: str | Path) -> None:
    write_atomically(path, json.dumps(document, indent=1, ensure_ascii=False) + "\n")


def load(path: str | Path) -> dict[str, Any]:
    text = read_text(path, "results file")
    document = parse_json(text, path, "results file", "re-run the tests to write it again")
    if not isinstance(document, dict) or document.get("schema") != SCHEMA_ID:
        found = document.get("schema") if isinstance(document, dict) else type(document).__name__
        raise InputError(str(path), 1, f"not a stepgraph results file (schema {found!r}, expected {SCHEMA_ID!r})",
                         "pass a file written by --stepgraph-results")
    try:
        _validator()(document)
    except fastjsonschema.JsonSchemaValueException as error:
        json_path = [int(p) if p.isdigit() else p for p in error.path[1:]]
        where = "/".join(str(p) for p in json_path) or "(top level)"
        message = error.message.removeprefix(error.name or "").strip()
        line, col = _position_of(text, json_path)
        raise InputError(str(path), line, f"{where}: {message}",
                         "the file does not follow stepgraph-results/1; re-run the tests to write it again", col) from None
    return document


def _position_of(text: str, json_path: list[str | int]) -> tuple[int, int]:
    """Locate a JSON path in the text (slow path, errors only): ruamel keeps line numbers."""
    try:
        node = YAML(typ="rt").load(text)
    except YAMLError:  # the JSON already parsed; if YAML disagrees, line 1 is the honest answer
        return 1, 1
    return node_position(node, json_path)
