"""Field ownership → server-side apply as the real server does it: `managedFields`, one owner set
per field manager, 409 conflicts naming the managers, `force`, and removal of fields a manager
stops applying.

A field is a path of keys; a list whose items are objects with a `name` (containers, env,
ports, volumes …) is keyed by that name (`k:{"name":"x"}`, as FieldsV1 spells it), any other
list is one atomic field. An Apply owns exactly the fields in its configuration; an Update (any
other write) takes the fields whose value it changed. Applying a value that differs from the
current one on a field another manager owns is a conflict, unless forced (then the field changes
hands). Fields the manager applied before, no longer applies, and nobody else owns are removed.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from .errors import ApiError

Path = tuple[str, ...]
IGNORED = {("apiVersion",), ("kind",), ("status",)}
IGNORED_META = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
                "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"}


def _item_key(item: Any) -> str | None:
    return f'k:{{"name":{json.dumps(item["name"])}}}' if isinstance(item, dict) and "name" in item else None


def leaves(obj: Any, prefix: Path = ()) -> dict[Path, Any]:
    """Every owned field of `obj` → its value."""
    out: dict[Path, Any] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            path = (*prefix, f"f:{k}")
            if ((k,) in IGNORED and not prefix) or (prefix == ("f:metadata",) and k in IGNORED_META):
                continue
            if isinstance(v, dict) and v:
                out |= leaves(v, path)
            elif isinstance(v, list) and v and all(_item_key(i) for i in v):
                for item in v:
                    key = _item_key(item)
                    assert key is not None  # every item has one (checked above)
                    out[(*path, key)] = None  # the item itself
                    out |= leaves({k2: v2 for k2, v2 in item.items() if k2 != "name"}, (*path, key))
            else:
                out[path] = v
    return out


def _get(obj: Any, path: Path) -> Any:
    cur = obj
    for part in path:
        if part.startswith("f:") and isinstance(cur, dict):
            cur = cur.get(part[2:])
        elif part.startswith("k:") and isinstance(cur, list):
            name = json.loads(part[2:])["name"]
            cur = next((i for i in cur if isinstance(i, dict) and i.get("name") == name), None)
        else:
            return None
    return cur


def _remove(obj: dict, path: Path) -> None:
    parent = _get(obj, path[:-1]) if len(path) > 1 else obj
    last = path[-1]
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(parent, list):
        name = json.loads(last[2:])["name"]
        parent[:] = [i for i in parent if not (isinstance(i, dict) and i.get("name") == name)]


def _merge(target: Any, applied: Any) -> Any:
    if isinstance(target, dict) and isinstance(applied, dict):
        out = dict(target)
        for k, v in applied.items():
            out[k] = _merge(target.get(k), v)
        return out
    if isinstance(target, list) and isinstance(applied, list) and applied and all(_item_key(i) for i in applied) \
            and all(_item_key(i) for i in target):
        by_name = {i["name"]: i for i in target}
        merged = [_merge(by_name.get(i["name"]), i) for i in applied]
        return merged + [i for i in target if i["name"] not in {a["name"] for a in applied}]
    return copy.deepcopy(applied)


def to_fields_v1(paths: set[Path]) -> dict:
    tree: dict = {}
    for path in sorted(paths):
        node = tree
        for i, part in enumerate(path):
            node = node.setdefault(part, {})
            if part.startswith("k:") and i == len(path) - 1:
                node.setdefault(".", {})
    return tree


def from_fields_v1(tree: dict, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for k, v in tree.items():
        if k == ".":
            continue
        path = (*prefix, k)
        if v and set(v) != {"."}:
            out |= from_fields_v1(v, path)
            if "." in v:
                out.add(path)
        else:
            out.add(path)
    return out


def _owners(obj: dict) -> list[dict]:
    return [dict(e) for e in obj.get("metadata", {}).get("managedFields") or []]


def _owned(entry: dict) -> set[Path]:
    return from_fields_v1(entry.get("fieldsV1") or {})


def _entry(manager: str, operation: str, api_version: str, paths: set[Path], now: str) -> dict:
    return {"manager": manager, "operation": operation, "apiVersion": api_version, "time": now,
            "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(paths)}


def _spell(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[name={json.loads(part[2:])['name']}]" if part.startswith("k:") else "." + part[2:]
    return out


def apply(current: dict | None, applied: dict, manager: str, force: bool, api_version: str, now: str) -> dict:
    """The object after `manager` applies `applied` to `current` (None: create)."""
    if not manager:
        raise ApiError(400, "PATCH, fieldManager is required for apply requests", "BadRequest")
    base = copy.deepcopy(current) if current is not None else {}
    entries = _owners(base)
    wanted = leaves(applied)
    mine_before = set().union(*(_owned(e) for e in entries if e["manager"] == manager and e["operation"] == "Apply"))
    conflicts: dict[str, list[Path]] = {}
    for e in entries:
        if e["manager"] == manager and e["operation"] == "Apply":
            continue
        for path in _owned(e) & set(wanted):
            if _get(base, path) != wanted[path] and not path[-1].startswith("k:"):
                conflicts.setdefault(e["manager"], []).append(path)
    if conflicts and not force:
        count = sum(len(p) for p in conflicts.values())
        if count == 1:
            [(who, [path])] = conflicts.items()
            text = f'conflict with "{who}" using {api_version}: {_spell(path)}'
        else:
            text = "\n".join(f'conflicts with "{who}" using {api_version}:\n' + "\n".join(f"- {_spell(p)}" for p in paths)
                             for who, paths in conflicts.items())
        raise ApiError(409, f'Apply failed with {count} conflict{"s" if count > 1 else ""}: {text}', "Conflict",
                       causes=[{"reason": "FieldManagerConflict", "message": f'conflict with "{who}" using {api_version}',
                                "field": _spell(p)} for who, paths in conflicts.items() for p in paths])
    result = _merge(base, applied)
    others = set().union(*(_owned(e) for e in entries if not (e["manager"] == manager and e["operation"] == "Apply")))
    for path in sorted(mine_before - set(wanted) - others, key=len, reverse=True):
        _remove(result, path)
    kept = []
    for e in entries:
        if e["manager"] == manager and e["operation"] == "Apply":
            continue
        rest = _owned(e) - set(wanted) if force or conflicts else _owned(e) - {p for p in wanted if _get(base, p) != wanted[p]}
        if rest:
            kept.append({**e, "fieldsV1": to_fields_v1(rest)})
    result.setdefault("metadata", {})["managedFields"] = [_entry(manager, "Apply", api_version, set(wanted), now), *kept]
    return result


def record_update(old: dict | None, new: dict, manager: str, api_version: str, now: str) -> None:
    """An ordinary write: `manager` takes the fields whose value it changed (in place on `new`)."""
    before = leaves(old) if old is not None else {}
    after = leaves(new)
    changed = {p for p, v in after.items() if p not in before or before[p] != v}
    entries = _owners(old) if old is not None else []
    kept = []
    mine: set[Path] = set(changed)
    for e in entries:
        rest = (_owned(e) - changed) & set(after)
        if e["manager"] == manager and e["operation"] == "Update":
            mine |= rest
        elif rest:
            kept.append({**e, "fieldsV1": to_fields_v1(rest)})
    if mine:
        kept.insert(0, _entry(manager, "Update", api_version, mine, now))
    if kept:
        new.setdefault("metadata", {})["managedFields"] = kept
    else:
        new.get("metadata", {}).pop("managedFields", None)
