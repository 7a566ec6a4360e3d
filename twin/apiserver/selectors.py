"""Selector strings → predicates: label selectors (equality and set-based) and field selectors.

Grammar as the API server accepts it: requirements separated by commas; `k`, `!k`, `k=v`,
`k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`.  A malformed selector is a 400 BadRequest.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping

from .errors import bad_request

Predicate = Callable[[Mapping[str, str]], bool]

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET = re.compile(rf"^\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)\s*$")
_EQ = re.compile(rf"^\s*(?P<key>{_KEY})\s*(?P<op>==|!=|=)\s*(?P<value>{_VALUE})\s*$")
_EXISTS = re.compile(rf"^\s*(?P<neg>!?)\s*(?P<key>{_KEY})\s*$")


def _split(selector: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, current = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p for p in parts if p.strip()]


def parse_label_selector(selector: str | None) -> Predicate:
    """A predicate over a labels mapping; empty selector matches everything."""
    if not selector or not selector.strip():
        return lambda labels: True
    checks = [_requirement(part, selector) for part in _split(selector)]
    return lambda labels: all(check(labels) for check in checks)


def _requirement(part: str, whole: str) -> Predicate:
    if m := _SET.match(part):
        key, values = m["key"], {v.strip() for v in m["values"].split(",") if v.strip()}
        if not values:
            raise bad_request(f"unable to parse requirement: for 'in', 'notin' operators, values set can't be empty: {whole!r}")
        if m["op"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _EQ.match(part):
        key, value = m["key"], m["value"]
        if m["op"] == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if m := _EXISTS.match(part):
        key = m["key"]
        if m["neg"]:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise bad_request(f"unable to parse requirement: invalid label selector {whole!r} at {part.strip()!r}")


# Fields each resource may be selected on (besides metadata.name and metadata.namespace).
FIELD_PATHS: dict[str, tuple[str, ...]] = {
    "pods": ("spec.nodeName", "status.phase", "spec.restartPolicy", "spec.schedulerName",
             "spec.serviceAccountName", "status.podIP", "status.nominatedNodeName", "spec.hostNetwork"),
    "events": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
               "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
               "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"),
    "namespaces": ("status.phase",),
    "nodes": ("spec.unschedulable",),
    "secrets": ("type",),
}


def required_field(selector: str | None, path: str) -> str | None:
    """The value a field selector requires `path` to have (`path=v` or `path==v`), if it does:
    lets a caller narrow the candidates through an index before the selector's own check."""
    for part in _split(selector or ""):
        m = re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|=)\s*(.*?)\s*$", part)
        if m and m.group(1) == path:
            return m.group(3)
    return None


def field_value(obj: Mapping, path: str) -> str:
    """What a field selector compares for `path` (missing → "")."""
    return _field_value(obj, path)


def _field_value(obj: Mapping, path: str) -> str:
    cur: object = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    if path == "source" and isinstance(cur, Mapping):
        cur = cur.get("component")
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return "" if cur is None else str(cur)


def _field_is(path: str, value: str, equal: bool, obj: Mapping) -> bool:
    return (_field_value(obj, path) == value) == equal


def parse_field_selector(selector: str | None, resource: str) -> Callable[[Mapping], bool]:
    """A predicate over whole objects; unknown fields are a 400 as on a real server."""
    if not selector or not selector.strip():
        return lambda obj: True
    allowed = ("metadata.name", "metadata.namespace", *FIELD_PATHS.get(resource, ()))
    checks: list[Callable[[Mapping], bool]] = []
    for part in _split(selector):
        m = re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*?)\s*$", part)
        if not m:
            raise bad_request(f"invalid selector: {selector!r}; can't understand {part.strip()!r}")
        path, op, value = m.groups()
        if path not in allowed:
            raise bad_request(f'"{path}" is not a known field selector: only "{", ".join(allowed)}"')
        checks.append(functools.partial(_field_is, path, value, op != "!="))
    return lambda obj: all(check(obj) for check in checks)
