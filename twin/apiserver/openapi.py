"""Served resource types → the OpenAPI v3 index (`/openapi/v3`) and per-group-version documents.

Each document carries, per kind, its PATCH operation with the `fieldValidation` parameter (kubectl
≥ 1.27 looks for it to hand field validation to the server, `?fieldValidation=Strict`) and the
component schemas: for built-in kinds the upstream definitions the server validates with
(`schemas.py`), turned back from JSON Schema into OpenAPI (`#/components/schemas/…` references, one
type per field), with every definition they reference; for custom resources their version's
`openAPIV3Schema`.  That is what `kubectl explain` reads.
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Any

from . import schemas
from .resources import ResourceType, ResourceTypes

_REF = "#/$defs/"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

_QUERY = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def index(types: ResourceTypes) -> dict:
    gvs = sorted({(t.group, v) for t in types.all() for v in t.versions})
    paths = {}
    for group, version in gvs:
        path = _gv_path(group, version)
        digest = hashlib.sha256(repr(sorted(t.key for t in types.all())).encode()).hexdigest()[:16].upper()
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def group_version_doc(types: ResourceTypes, group: str, version: str) -> dict | None:
    served = [t for t in types.all() if t.group == group and version in t.versions]
    if not served:
        return None
    paths, components = {}, {}
    for t in served:
        paths[_item_path(t, version)] = {"patch": _patch_op(t, version), "parameters": [
            {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]}
        if t.builtin:
            name = schemas.definition_name(t.group, version, t.kind)
            if name is not None:
                components.update(_builtin_closure(name))
        elif t.schemas.get(version):
            components.update(_custom_schema(t, version))
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes (stepgraph twin)", "version": "v1.31.0"},
            "paths": paths, "components": {"schemas": components}}


@cache
def _builtin_closure(name: str) -> dict[str, dict]:
    """The definition `name` and every definition it references, as OpenAPI component schemas."""
    out: dict[str, dict] = {}
    pending = [name]
    while pending:
        current = pending.pop()
        if current in out:
            continue
        out[current] = _to_openapi(schemas.definitions()[current], pending)
    return out


def _to_openapi(node: Any, refs: list[str]) -> Any:
    """JSON Schema as kubernetes-validate writes it → OpenAPI v3: `$defs` references become
    component references (collected into `refs`), `["string", "null"]` types a single type, and the
    `enum` it pins `apiVersion`/`kind` to is left out, as the real documents leave it."""
    if isinstance(node, list):
        return [_to_openapi(n, refs) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str) and value.startswith(_REF):
            refs.append(value[len(_REF):])
            out[key] = "#/components/schemas/" + value[len(_REF):]
        elif key == "type" and isinstance(value, list):
            kinds = [v for v in value if v != "null"]
            if kinds:
                out[key] = kinds[0]
        else:
            out[key] = _to_openapi(value, refs)
    for name in ("apiVersion", "kind"):
        prop = (out.get("properties") or {}).get(name)
        if isinstance(prop, dict) and "x-kubernetes-group-version-kind" in node:
            prop.pop("enum", None)
    return out


def _custom_schema(t: ResourceType, version: str) -> dict[str, dict]:
    """A custom resource's schema under the name the real server gives it (reversed group)."""
    schema = dict(t.schemas[version])
    properties = dict(schema.get("properties") or {})
    properties.setdefault("apiVersion", {"type": "string"})
    properties.setdefault("kind", {"type": "string"})
    properties["metadata"] = {"$ref": f"#/components/schemas/{_OBJECT_META}"}
    schema["properties"] = properties
    schema["x-kubernetes-group-version-kind"] = [{"group": t.group, "version": version, "kind": t.kind}]
    name = ".".join(reversed(t.group.split("."))) + f".{version}.{t.kind}"
    return {name: schema, **_builtin_closure(_OBJECT_META)}


def _item_path(t: ResourceType, version: str) -> str:
    base = "/" + _gv_path(t.group, version)
    return f"{base}/namespaces/{{namespace}}/{t.plural}/{{name}}" if t.namespaced else f"{base}/{t.plural}/{{name}}"


def _patch_op(t: ResourceType, version: str) -> dict:
    return {"operationId": f"patch{t.kind}", "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": t.group, "version": version, "kind": t.kind},
            "parameters": [{"name": q, "in": "query", "schema": {"type": "string"}} for q in _QUERY],
            "responses": {"200": {"description": "OK"}}}
