"""The published JSON Schema: generated from the step models, shipped as package data, in sync."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from dsl_vocabulary import make_registry

from stepgraph.dsl import REGISTRY
from stepgraph.dsl.schema import dumps, published_schema_text, scenario_schema
from stepgraph.dsl.yaml_syntax import parse_yaml

REPO = Path(__file__).resolve().parents[2]


def test_published_schema_matches_the_registered_steps() -> None:
    REGISTRY.load_entry_points()
    assert published_schema_text() == dumps(scenario_schema(REGISTRY)), (
        "dsl/data/scenario.schema.json is out of date — run `stepgraph schema --out dsl/data/scenario.schema.json`"
    )


def test_published_schema_is_a_valid_schema_that_accepts_the_demo() -> None:
    schema = json.loads(published_schema_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    for demo in (REPO / "scenarios" / "demo").glob("*.yaml"):
        data, _, diags = parse_yaml(demo.read_text(), demo.name)
        assert not diags
        jsonschema.validate(data, schema)


def test_schema_carries_each_steps_parameters() -> None:
    schema = scenario_schema(make_registry())
    validator = jsonschema.Draft202012Validator(schema)
    good = {"title": "T", "steps": [{"power_limit": {"gpu": "$g", "equals": "300 W"}}, {"baseline": {"of": "x", "as": "g"}}]}
    assert not list(validator.iter_errors(good))
    bad = {"title": "T", "steps": [{"power_limit": {"gpu": "$g", "equals": "300 V"}}, {"nope": {}}, {"baseline": {"of": "x", "as": "$g"}}]}
    paths = sorted("/".join(map(str, e.absolute_path)) for e in validator.iter_errors(bad))
    assert paths == ["steps/0/power_limit/equals", "steps/1", "steps/2/baseline/as"]


@pytest.mark.parametrize("key", ["title", "steps", "feature", "scenarios", "background"])
def test_layout_keys_are_documented_in_the_schema(key: str) -> None:
    text = published_schema_text()
    assert f'"{key}"' in text
