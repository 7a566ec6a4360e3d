"""Served resource types → a minimal OpenAPI v3 index (`/openapi/v3`) and per-group-version docs.

Only what clients probe for: kubectl (≥ 1.27) looks for each kind's PATCH operation and its
`fieldValidation` parameter to decide that the server validates fields itself; with that it
sends `?fieldValidation=Strict` instead of downloading schemas to validate client-side.
Component schemas are left out (kubectl then computes patches from its compiled-in types, or
uses merge patch for custom resources, as it does against any server without them).
"""

from __future__ import annotations

import hashlib

from .resources import ResourceType, ResourceTypes

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
    paths = {}
    for t in served:
        paths[_item_path(t, version)] = {"patch": _patch_op(t, version), "parameters": [
            {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes (stepgraph twin)", "version": "v1.31.0"},
            "paths": paths, "components": {"schemas": {}}}


def _item_path(t: ResourceType, version: str) -> str:
    base = "/" + _gv_path(t.group, version)
    return f"{base}/namespaces/{{namespace}}/{t.plural}/{{name}}" if t.namespaced else f"{base}/{t.plural}/{{name}}"


def _patch_op(t: ResourceType, version: str) -> dict:
    return {"operationId": f"patch{t.kind}", "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": t.group, "version": version, "kind": t.kind},
            "parameters": [{"name": q, "in": "query", "schema": {"type": "string"}} for q in _QUERY],
            "responses": {"200": {"description": "OK"}}}
