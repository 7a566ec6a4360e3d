"""The registry → the JSON Schema of the YAML scenario format (published, and used to validate).

`scenario_schema(registry)` is the published schema: every step key with its parameter model, for
editors (`# yaml-language-server: $schema=...`). `structure_schema()` is what the loader checks
first: the same layout with step parameters left open, because the step's pydantic model then
checks them with clearer, unit-aware messages.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from .bindings import NAME_PATTERN
from .registry import Registry
from .units import DURATION_TEXT

SCHEMA_RESOURCE = "data/scenario.schema.json"
SCHEMA_ID = "https://stepgraph.dev/schema/scenario.schema.json"

_DURATION = {"anyOf": [{"type": "string", "pattern": rf"^\s*{DURATION_TEXT}\s*$"}, {"type": "number", "minimum": 0}]}
_TAG = {"type": "string", "pattern": r"^[^\s@]+$"}
_META = {
    "id": {"type": "string", "pattern": r"^[^\s@:]+$", "description": "requirement id, e.g. B5 (Gherkin: @id:B5)"},
    "design": {"type": "array", "items": {"type": "string", "pattern": r"^[^\s@]+$"}, "description": "design-doc ids"},
    "needs": {"type": "array", "items": _TAG, "description": "capabilities the target must have"},
    "tags": {"type": "array", "items": _TAG},
    "description": {"type": "string"},
}


def _step_item(step_values: dict[str, Any], open_value: Any) -> dict[str, Any]:
    properties = dict(step_values)
    properties["expect"] = {"$ref": "#/$defs/expect"}
    return {
        "description": "one step: {key: {parameters}}, or just the key of a step without parameters",
        "type": ["object", "string"],
        "minProperties": 1,
        "maxProperties": 1,
        "properties": properties,
        "additionalProperties": open_value,
    }


def _layout(step: dict[str, Any]) -> dict[str, Any]:
    steps = {"type": "array", "items": {"$ref": "#/$defs/step"}}
    scenario_props = {"title": {"type": "string", "minLength": 1}, **_META, "steps": {"$ref": "#/$defs/steps"}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "stepgraph scenario file",
        "type": "object",
        "if": {"required": ["scenarios"]},
        "then": {"$ref": "#/$defs/featureFile"},
        "else": {"$ref": "#/$defs/scenarioFile"},
        "$defs": {
            "featureFile": {
                "type": "object",
                "required": ["feature", "scenarios"],
                "properties": {
                    "feature": {"type": "string", "minLength": 1},
                    **_META,
                    "background": {"$ref": "#/$defs/steps"},
                    "scenarios": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/scenario"}},
                },
                "additionalProperties": False,
            },
            "scenarioFile": {
                "type": "object",
                "required": ["title", "steps"],
                "properties": {**scenario_props, "background": {"$ref": "#/$defs/steps"}},
                "additionalProperties": False,
            },
            "scenario": {
                "type": "object",
                "required": ["title", "steps"],
                "properties": scenario_props,
                "additionalProperties": False,
            },
            "steps": steps,
            "step": step,
            "expect": {
                "type": "object",
                "description": "checks in a window: `all` each in turn, `together` judged at once",
                "not": {"anyOf": [{"required": ["within", "throughout"]}, {"required": ["all", "together"]}]},
                "anyOf": [
                    {"required": ["all"]},
                    {"required": ["together"], "anyOf": [{"required": ["within"]}, {"required": ["throughout"]}]},
                ],
                "properties": {
                    "within": {**_DURATION, "description": "the checks come to hold before this much time has passed"},
                    "throughout": {**_DURATION, "description": "the checks hold at every observation for this long"},
                    "all": {
                        "type": "array",
                        "minItems": 1,
                        "items": {"$ref": "#/$defs/step"},
                        "description": "each check in its own window, in turn",
                    },
                    "together": {
                        "type": "array",
                        "minItems": 1,
                        "items": {"$ref": "#/$defs/step"},
                        "description": "checks judged together: all hold at one observation (within) or at every observation (throughout)",
                    },
                },
                "additionalProperties": False,
            },
        },
    }


def structure_schema() -> dict[str, Any]:
    return _layout(_step_item({}, {"type": ["object", "null"]}))


def scenario_schema(registry: Registry) -> dict[str, Any]:
    """The published schema: the layout plus every registered step's parameters."""
    defs: dict[str, Any] = {}
    values: dict[str, Any] = {}
    for decl in registry:
        params = decl.params.model_json_schema(ref_template="#/$defs/{model}")
        defs.update(params.pop("$defs", {}))
        params.pop("title", None)
        params["properties"] = dict(params.get("properties", {}))
        if decl.produces:
            params["properties"]["as"] = {"type": "string", "pattern": f"^{NAME_PATTERN}$", "description": f"bind the {decl.produces}"}
        params["description"] = f"{decl.id}: {decl.phrase.text}"
        values[decl.key] = (
            params
            if decl.params.model_fields and any(f.is_required() for f in decl.params.model_fields.values())
            else {"anyOf": [params, {"type": "null"}]}
        )
    schema = _layout(_step_item(values, False))
    schema["$defs"].update(defs)
    return schema


def dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def published_schema_text() -> str:
    """The schema shipped with the package (kept equal to `scenario_schema` by a drift test)."""
    return resources.files("stepgraph.dsl").joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")
