"""The compiled validator that answers the happy path accepts exactly what jsonschema accepts.

Writes are checked by a fastjsonschema validator first and explained by jsonschema only when it
rejects; were the compiled one more permissive, an invalid object would be stored. Every leaf
and container of a running pod is replaced by values of every JSON type, and every object gets
an unknown field: both validators must agree on each variant.
"""

from __future__ import annotations

import copy

import fastjsonschema

from stepgraph.twin.apiserver import schemas

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "labels": {"a": "b"}, "annotations": {"k": "v"},
                 "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u"}]},
    "spec": {"nodeName": "n", "terminationGracePeriodSeconds": 30,
             "tolerations": [{"key": "k", "operator": "Exists"}],
             "containers": [{"name": "c", "image": "i", "command": ["sleep"], "ports": [{"containerPort": 80}],
                             "env": [{"name": "E", "value": "1"}],
                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
               "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "image": "i", "imageID": "",
                                      "state": {"running": {"startedAt": "2020-01-01T00:00:00Z"}}}]},
}
REPLACEMENTS = [1, 1.5, "s", True, None, [], {}, [1], {"z": 1}]
# What the compiled (draft-07) and the explaining (2020-12) validator implement alike; a schema
# upgrade that brings another keyword must be looked at before the fast path may trust it.
SHARED_KEYWORDS = {"type", "properties", "additionalProperties", "items", "required", "enum", "oneOf", "$ref",
                   "format", "$defs"}


def _paths(node, prefix=()):
    yield prefix
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in children:
        yield from _paths(value, (*prefix, key))


def _variants():
    for path in _paths(POD):
        if not path:
            continue
        for value in REPLACEMENTS:
            variant = copy.deepcopy(POD)
            parent = variant
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = value
            yield variant
        variant = copy.deepcopy(POD)
        node = variant
        for key in path:
            node = node[key]
        if isinstance(node, dict):
            node["zzUnknown"] = 1
            yield variant


def _keywords(node, found):
    if isinstance(node, list):
        for item in node:
            _keywords(item, found)
    elif isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            if key in ("properties", "patternProperties", "$defs"):
                for sub in value.values():
                    _keywords(sub, found)
            elif key not in ("enum", "required"):
                _keywords(value, found)
    return found


def test_the_definitions_use_only_keywords_both_validators_implement_alike():
    assert _keywords({"$defs": schemas._lean_definitions()}, set()) <= SHARED_KEYWORDS


def test_compiled_and_jsonschema_agree_on_every_variant_of_a_pod():
    name = schemas.definition_name("", "v1", "Pod")
    variants = list(_variants())
    disagree = []
    for variant in variants:
        explained = list(schemas._validator(name).iter_errors(variant))
        try:
            schemas._compiled(name)(variant)
            accepted = True
        except fastjsonschema.JsonSchemaValueException:
            accepted = False
        if accepted != (not explained):
            disagree.append((accepted, [e.message for e in explained]))
    assert len(variants) > 400
    assert not disagree
    assert schemas.validate("", "v1", "Pod", POD) == ([], [])


def test_a_rejected_write_is_explained_by_jsonschema():
    bad = copy.deepcopy(POD)
    bad["spec"]["containers"][0]["image"] = 3
    bad["spec"]["zzUnknown"] = 1
    assert schemas.validate("", "v1", "Pod", bad) == (
        [("FieldValueInvalid", "spec.containers[0].image", "Invalid value: 3: 3 is not of type 'string', 'null'")],
        ["spec.zzUnknown"])
