"""PATCH bodies → new objects: JSON merge patch (RFC 7386), strategic merge patch, JSON patch.

Strategic merge is driven by the schema's `x-kubernetes-patch-strategy` / `-merge-key`
(`schemas.child`), so lists of containers merge by name, env by name, finalizers as a set,
and `$patch: replace|delete` directives work as kubectl sends them.
"""

from __future__ import annotations

from typing import Any

import jsonpatch

from . import schemas
from .copies import copy_tree
from .errors import ApiError, bad_request

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)


def apply(kind: str, current: dict, patch: Any, *, builtin: bool, schema: dict | None) -> Any:
    """The patched object for a PATCH of content type `kind` (415 for types we do not take). It
    holds nothing of `patch` (values are copied in), only new containers and parts of `current`."""
    if kind == JSON_PATCH:
        return json_patch(current, patch)
    if kind == STRATEGIC_PATCH:
        if not builtin:  # custom resources have no patch strategies: a real server refuses too
            raise ApiError(415, f"the body of the request was in an unknown format - accepted media types include: "
                                f"{JSON_PATCH}, {MERGE_PATCH}, {APPLY_PATCH}", "UnsupportedMediaType")
        return strategic_merge_patch(current, patch, schema)
    if kind in (MERGE_PATCH, APPLY_PATCH):
        if not isinstance(patch, dict):
            raise bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
        return merge_patch(current, patch)
    raise ApiError(415, f"the body of the request was in an unknown format - accepted media types include: "
                        f"{', '.join(PATCH_TYPES)}", "UnsupportedMediaType")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy_tree(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: dict, ops: Any) -> dict:
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    try:
        return jsonpatch.JsonPatch(ops).apply(target, in_place=False)  # (it copies the operations' values in)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError) as exc:
        # The real server answers every patch that does not apply with this one sentence (the
        # library's own text, Python types and all, is not what clients see).
        raise ApiError(422, "the server rejected our request due to an error in our request", "Invalid") from exc


def strategic_merge_patch(target: dict, patch: Any, schema: dict | None) -> dict:
    if not isinstance(patch, dict):
        raise bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
    return _merge_map(target, patch, schema or {})


def _merge_map(target: Any, patch: dict, schema: dict) -> Any:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy_tree(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue  # $setElementOrder / $retainKeys: ordering hints we need not honour
        if value is None:
            result.pop(key, None)
            continue
        raw, node = schemas.child(schema, key)
        if isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, raw)
        elif isinstance(value, dict):
            merged = _merge_map(result.get(key), value, node)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = copy_tree(value)
    return result


def _merge_list(target: Any, patch: list, raw: dict) -> list:
    strategy = raw.get("x-kubernetes-patch-strategy", "")
    if "merge" not in strategy.split(",") or not isinstance(target, list):
        return [copy_tree(v) for v in patch if not (isinstance(v, dict) and v.get("$patch"))]
    key = raw.get("x-kubernetes-patch-merge-key")
    if key is None:  # a set of primitives (finalizers): union, keeping order
        return list(target) + [v for v in patch if v not in target]
    item_schema = schemas.items(raw)
    result = [copy_tree(v) for v in target]
    for item in patch:
        if not isinstance(item, dict):
            continue
        if item.get("$patch") == "replace" and len(item) == 1:
            return []
        at = next((i for i, t in enumerate(result) if isinstance(t, dict) and t.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if at is not None:
                result.pop(at)
        elif at is None:
            result.append({k: copy_tree(v) for k, v in item.items() if not k.startswith("$")})
        else:
            result[at] = _merge_map(result[at], item, item_schema)
    return result
