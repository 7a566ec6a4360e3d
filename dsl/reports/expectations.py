"""Expected outcomes per world, declared as data (YAML) → checked against the actual results.

    # expected-outcomes.yaml
    - name: stub-workers, NVML pass
      world: stub-workers          # optional: only scenarios run in this world
      target: twin                 # optional
      files: [scenarios/multi_dgd/*]   # optional: globs over the scenario's file
      without_tags: [needs:dcgm]   # optional: drop scenarios carrying any of these tags
      with_tags: []                # optional: keep only scenarios carrying all of these
      expect: {passed: 5, skipped: 2}

Only the outcomes named under `expect` are compared (an omitted one is not checked); `total`
may be given as well. An expectation that selects no scenario at all in the results (its world
was not run, say) is *not run*: shown, but neither met nor failed, so one file can declare every
world while each run checks the worlds it ran.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from stepgraph.dsl.reports.errors import InputError, node_position, read_text

_COUNTS = {"type": "integer", "minimum": 0}
SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["name", "expect"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string"},
            "world": {"type": "string"},
            "target": {"type": "string"},
            "files": {"type": "array", "items": {"type": "string"}},
            "with_tags": {"type": "array", "items": {"type": "string"}},
            "without_tags": {"type": "array", "items": {"type": "string"}},
            "expect": {
                "type": "object", "minProperties": 1, "additionalProperties": False,
                "properties": {k: _COUNTS for k in ("passed", "failed", "skipped", "undefined", "error", "total")},
            },
        },
    },
}


@dataclass(frozen=True)
class Expectation:
    name: str
    expect: dict[str, int]
    world: str | None = None
    target: str | None = None
    files: list[str] = field(default_factory=list)
    with_tags: list[str] = field(default_factory=list)
    without_tags: list[str] = field(default_factory=list)
    where: str = ""

    def selects(self, record: dict[str, Any]) -> bool:
        tags = set(record["tags"])
        return ((self.world is None or record["world"] == self.world)
                and (self.target is None or record["target"] == self.target)
                and (not self.files or any(fnmatch.fnmatchcase(record["feature"]["file"], g) for g in self.files))
                and all(t.lstrip("@") in tags for t in self.with_tags)
                and not any(t.lstrip("@") in tags for t in self.without_tags))


def load_expectations(path: str | Path, name: str | None = None) -> list[Expectation]:
    """Read the expectations file at `path`; each one's `where` names it `name` (default: `path`)."""
    path = str(path)
    text = read_text(path, "expectations file")
    try:
        data = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise InputError(path, line, f"expectations file is not valid YAML ({exc.problem})", "fix the YAML syntax", col) from None
    except YAMLError as exc:
        raise InputError(path, 1, f"expectations file is not valid YAML ({exc})", "fix the YAML syntax") from None
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data))
    if error is not None:
        line, col = node_position(data, list(error.absolute_path))
        raise InputError(path, line, error.message,
                         "each entry needs `name` and `expect: {passed: N, …}` (see expectations.py)", col)
    return [Expectation(where=f"{name or path}:{node_position(data, [k])[0]}", **dict(entry)) for k, entry in enumerate(data)]


def check_expectations(expectations: list[Expectation], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    checked = []
    for exp in expectations:
        counts = Counter(r["outcome"] for r in records if exp.selects(r))
        actual = {k: (sum(counts.values()) if k == "total" else counts.get(k, 0)) for k in exp.expect}
        ran = bool(counts)
        checked.append({"name": exp.name, "where": exp.where, "expected": dict(exp.expect), "actual": actual,
                        "all_actual": dict(counts), "ran": ran, "ok": not ran or actual == dict(exp.expect)})
    return checked
