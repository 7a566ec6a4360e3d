"""The real Kubernetes OpenAPI schema (as shipped by kubernetes-validate) → validation and
strategic-merge directives.

kubernetes-validate carries the upstream schema as JSON Schema; its `validate()` re-reads the
files on every call (~10 ms), so we load `_definitions.json` once and keep one compiled
validator per kind.  The same definitions carry `x-kubernetes-patch-strategy` and
`x-kubernetes-patch-merge-key`, which is exactly what strategic merge patch needs (containers
merge by `name`, env by `name`, finalizers as a set, …) — no hand-kept table.

Every write is validated, so the happy path must be cheap: a fastjsonschema validator compiled
per kind (~15× faster than jsonschema on a pod, its code kept on disk) answers "valid" on its own; only when it
rejects does jsonschema run, to explain the failure with the messages clients see.  The compiled
one is never more permissive than jsonschema: the definitions use only keywords both implement
alike (type, properties, additionalProperties, items, required, enum, oneOf, `$ref` beside
nothing but annotations), and formats are annotations in both.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import re
import sys
import types
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import fastjsonschema
import jsonschema

from ..cache_dir import cache_root, write_atomically


@cache
def _schema_dir() -> Any:
    root = files("kubernetes_validate").joinpath("kubernetes-json-schema")
    versions = sorted((p.name for p in root.iterdir() if p.name.endswith("-local-strict")),
                      key=lambda n: tuple(int(x) for x in n[1:].split("-")[0].split(".")))
    return root.joinpath(versions[-1])


@cache
def definitions() -> dict[str, dict]:
    return json.loads(_schema_dir().joinpath("_definitions.json").read_text())["$defs"]


@cache
def _gvk_index() -> dict[tuple[str, str, str], str]:
    index = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            index[(gvk["group"], gvk["version"], gvk["kind"])] = name
    return index


def definition_name(group: str, version: str, kind: str) -> str | None:
    return _gvk_index().get((group, version, kind))


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": definitions()})


# Keys of a schema node that hold a map of sub-schemas (its keys are field names, not keywords).
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs")


def _without_annotations(node: Any) -> Any:
    """A schema without `description` and `x-kubernetes-*`: they do not validate anything, and
    left in they make the generated code ~6× larger and slower to compile."""
    if isinstance(node, list):
        return [_without_annotations(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "description" or key.startswith("x-kubernetes-"):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: _without_annotations(v) for k, v in value.items()}
        else:
            out[key] = _without_annotations(value)
    return out


@cache
def _lean_definitions() -> dict[str, dict]:
    return _without_annotations(definitions())


@cache
def _compiled(name: str) -> Any:
    """The compiled validator of definition `name`, built once per schema and kept on disk."""
    namespace: dict[str, Any] = {}
    exec(_validator_code(name), namespace)
    return namespace["validate"]


def _validator_code(name: str) -> types.CodeType:
    """Generating and compiling a pod's validator (it reaches most of core/v1) takes ~0.3 s and
    leaves ~17 MiB of the compiler's memory behind; loading the compiled code takes ~1 ms. So it
    is kept under the twin's cache folder, named by everything that makes it: the schema file,
    this module (how the schema is trimmed and the code rewritten), fastjsonschema's version and
    the interpreter's bytecode tag. A cache that cannot be read or written is rebuilt in memory."""
    key = hashlib.sha256(b"\0".join([
        _schema_dir().joinpath("_definitions.json").read_bytes(), Path(__file__).read_bytes(), name.encode(),
        fastjsonschema.VERSION.encode(), sys.version.encode()])).hexdigest()[:24]
    path = cache_root() / "validators" / f"{sys.implementation.cache_tag}-{key}.marshal"
    try:
        return marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        pass
    code = compile(_validator_source(name), f"<validator of {name}>", "exec")
    with contextlib.suppress(OSError):
        write_atomically(path, marshal.dumps(code))
    return code


# The built-in kinds a twin world writes as it starts and as its scenarios run (its node, the
# agent's DaemonSet and RBAC, workers' pods, their Events, the DGD CRD and the like).
WORLD_KINDS = (("", "v1", "Pod"), ("", "v1", "Event"), ("", "v1", "Node"), ("", "v1", "Namespace"),
               ("", "v1", "ConfigMap"), ("", "v1", "Service"), ("", "v1", "ServiceAccount"), ("apps", "v1", "DaemonSet"),
               ("rbac.authorization.k8s.io", "v1", "ClusterRole"), ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
               ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"))


def preload() -> None:
    """Build what checking the kinds of WORLD_KINDS takes: the schema definitions, their lean form
    and each kind's compiled validator (~0.12 CPU-s in all). A process that forks one process per
    world (`stepgraph run` with several worlds) calls it first, so that the worlds share one copy
    instead of each building its own."""
    for gvk in WORLD_KINDS:
        name = definition_name(*gvk)
        if name is not None:
            _compiled(name)
            _fieldwise(name)


# A generated `"…[{data__x}]".format(**locals())` names a list item for an error message, and it
# is built for every item, valid or not: `locals()` of a large function costs ~10 µs, half of a
# pod status's check. An f-string of the same literal gives the same text from the same locals.
_FORMAT_LOCALS = re.compile(r'"((?:[^"\\\n]|\\.)*)"\.format\(\*\*locals\(\)\)')
_ONLY_NAMES = re.compile(r"(?:[^{}]|\{[A-Za-z_][A-Za-z0-9_]*\})*")


def _as_fstring(match: re.Match[str]) -> str:
    literal = match.group(1)
    return f'f"{literal}"' if _ONLY_NAMES.fullmatch(literal) else match.group(0)


def _validator_source(name: str) -> str:
    """`use_default=False`: a validator must never fill defaults into the object it checks."""
    source = fastjsonschema.compile_to_code({"$ref": f"#/$defs/{name}", "$defs": _lean_definitions()},
                                            use_default=False, use_formats=False, detailed_exceptions=False)
    return _FORMAT_LOCALS.sub(_as_fstring, source)


def field_path(parts: Any) -> str:
    """deque(['spec', 'containers', 0, 'image']) → 'spec.containers[0].image'."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def validate(group: str, version: str, kind: str, obj: dict, *,
             valid_before: dict | None = None) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(invalid causes as (reason, field, message), unknown field paths) for a built-in kind.

    `valid_before`: an object that passed this same check (kind and version). A top-level field
    `obj` shares with it (the very same value, not an equal one: `True == 1`; or a mapping of the
    very same values under the same keys) is not checked again, where the kind's schema checks its
    fields one by one (see `_fieldwise`)."""
    name = definition_name(group, version, kind)
    if name is None:
        return [], []
    checked = obj
    if valid_before is not None and (required := _fieldwise(name)) is not None:
        checked = {k: v for k, v in obj.items() if k in required or not _same(v, valid_before.get(k, _ABSENT))}
    try:
        _compiled(name)(checked)
    except fastjsonschema.JsonSchemaValueException:
        return split_errors(_validator(name).iter_errors(obj))
    return [], []


_ABSENT = object()


def _same(value: Any, before: Any) -> bool:
    """`value` is `before`, or a dict holding the very objects `before` holds under the same keys
    (a status write's copy of the stored metadata): JSON Schema judges content, so it passes too."""
    if value is before:
        return True
    if type(value) is not dict or type(before) is not dict or len(value) != len(before):
        return False
    return all(k in before and before[k] is v for k, v in value.items())
# An object schema made of only these keywords is a conjunction over the object's fields: each
# field against its property's schema (or additionalProperties), plus the required ones present.
_FIELDWISE_KEYWORDS = frozenset({"type", "properties", "additionalProperties", "required"})


@cache
def _fieldwise(name: str) -> frozenset[str] | None:
    """The required fields of definition `name` if its schema checks an object field by field,
    else None. Then an object is valid exactly when the required fields are there and each field
    is valid, so only the fields that changed (and the required ones) need checking."""
    schema = _lean_definitions()[name]
    if set(schema) - _FIELDWISE_KEYWORDS:
        return None
    return frozenset(schema.get("required") or ())


def split_errors(errors: Any) -> tuple[list[tuple[str, str, str]], list[str]]:
    causes, unknown = [], []
    for err in sorted(errors, key=lambda e: list(map(str, e.absolute_path))):
        where = field_path(err.absolute_path)
        if err.validator == "additionalProperties":
            extra = set(err.instance) - set(err.schema.get("properties") or {})
            unknown += [f"{where}.{k}" if where else k for k in sorted(extra)]
        elif err.validator == "required":
            missing = err.message.split("'")[1] if "'" in err.message else err.message
            causes.append(("FieldValueRequired", f"{where}.{missing}" if where else missing, "Required value"))
        else:
            shown = json.dumps(err.instance) if not isinstance(err.instance, (dict, list)) else "…"
            causes.append(("FieldValueInvalid", where or "<root>", f"Invalid value: {shown}: {err.message}"))
    return causes, unknown


def validate_with(schema: dict, obj: dict) -> tuple[list[tuple[str, str, str]], list[str]]:
    """Validate against a CRD's openAPIV3Schema (structural; unknown fields are allowed)."""
    return split_errors(jsonschema.Draft202012Validator(schema).iter_errors(obj))


# -- strategic merge -------------------------------------------------------------------------
def resolve(node: dict | None) -> dict:
    """Follow `$ref` / single-entry `allOf` to the schema that has the properties."""
    while node:
        if "$ref" in node:
            node = definitions().get(node["$ref"].rsplit("/", 1)[-1], {})
        elif len(node.get("allOf") or []) == 1:
            node = node["allOf"][0]
        else:
            break
    return node or {}


def kind_schema(group: str, version: str, kind: str) -> dict | None:
    name = definition_name(group, version, kind)
    return definitions()[name] if name else None


def child(node: dict, key: str) -> tuple[dict, dict]:
    """(raw property schema carrying the x-kubernetes-* keys, its resolved schema)."""
    node = resolve(node)
    raw = (node.get("properties") or {}).get(key)
    if raw is None and isinstance(node.get("additionalProperties"), dict):
        raw = node["additionalProperties"]
    raw = raw or {}
    return raw, resolve(raw)


def items(node: dict) -> dict:
    return resolve(resolve(node).get("items") or {})
