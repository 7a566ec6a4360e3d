"""The published results schema is a valid JSON Schema and rejects what it documents as invalid."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from factories import record, write_results

from stepgraph.dsl.reports import results
from stepgraph.dsl.reports.errors import InputError


def test_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(results.schema())


def test_a_written_document_loads_back_unchanged(tmp_path: Path) -> None:
    path = write_results(tmp_path / "r.json", [record("B1"), record("B2", "skipped")])
    document = results.load(path)
    assert document["summary"] == {"passed": 1, "failed": 0, "skipped": 1, "undefined": 0, "error": 0, "total": 2}
    assert [r["id"] for r in document["scenarios"]] == ["B1", "B2"]


@pytest.mark.parametrize(("mutate", "where"), [
    (lambda d: d["scenarios"][0]["steps"][0].update(status="green"), "scenarios/0/steps/0/status"),
    (lambda d: d["scenarios"][0].pop("outcome"), "scenarios/0"),
    (lambda d: d["summary"].update(passed=-1), "summary/passed"),
    (lambda d: d["scenarios"][0]["fingerprint"].update(driver=590), "scenarios/0/fingerprint/driver"),
])
def test_schema_violations_name_the_field(tmp_path: Path, mutate: Callable[[dict], object], where: str) -> None:
    path = write_results(tmp_path / "r.json", [record("B1")])
    document = copy.deepcopy(json.loads(path.read_text()))
    mutate(document)
    path.write_text(json.dumps(document, indent=1))
    with pytest.raises(InputError, match=f": {where}: "):
        results.load(path)
