"""Objects → `meta.k8s.io/v1` Table responses, so `kubectl get` prints real columns.

kubectl asks for `application/json;as=Table;…` and falls back to plain JSON; we answer with a
Table for GET and LIST: pods get NAME / READY / STATUS / RESTARTS / AGE (+ IP / NODE wide),
custom resources their CRD's `additionalPrinterColumns` (simple `.a.b` paths), the rest NAME / AGE.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .resources import ResourceType


def wants_table(accept: str) -> bool:
    return "as=Table" in accept and "g=meta.k8s.io" in accept


def _age(created: str | None, now: float) -> str:
    if not created:
        return "<unknown>"
    seconds = max(0, int(now - datetime.fromisoformat(created).timestamp()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * 2:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _col(name: str, kind: str = "string", fmt: str = "", priority: int = 0) -> dict:
    return {"name": name, "type": kind, "format": fmt, "description": "", "priority": priority}


def _pod_cells(pod: dict) -> list[Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    total = len((pod.get("spec") or {}).get("containers") or [])
    phase = (pod.get("status") or {}).get("phase", "Pending")
    for s in statuses:
        waiting = (s.get("state") or {}).get("waiting") or {}
        terminated = (s.get("state") or {}).get("terminated") or {}
        phase = waiting.get("reason") or terminated.get("reason") or phase
    if pod["metadata"].get("deletionTimestamp"):
        phase = "Terminating"
    restarts = sum(int(s.get("restartCount", 0)) for s in statuses)
    return [f"{ready}/{total}", phase, restarts]


def _path(obj: dict, json_path: str) -> Any:
    cur: Any = obj
    for part in json_path.strip(".").split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


def table(rtype: ResourceType, items: list[dict], resource_version: str, now: float,
          printer_columns: list[dict] | None = None) -> dict:
    if rtype.key == "pods":
        cols = [_col("Name", fmt="name"), _col("Ready"), _col("Status"), _col("Restarts", "integer"),
                _col("Age"), _col("IP", priority=1), _col("Node", priority=1)]
    else:
        extra = [c for c in printer_columns or [] if c.get("name") != "Age"]
        cols = [_col("Name", fmt="name"), *(_col(c["name"], c.get("type", "string")) for c in extra), _col("Age")]
    rows = []
    for obj in items:
        md = obj["metadata"]
        if rtype.key == "pods":
            cells = [md["name"], *_pod_cells(obj), _age(md.get("creationTimestamp"), now),
                     (obj.get("status") or {}).get("podIP", "<none>"), (obj.get("spec") or {}).get("nodeName", "<none>")]
        else:
            values = [_path(obj, c.get("jsonPath", "")) for c in printer_columns or [] if c.get("name") != "Age"]
            cells = [md["name"], *("<none>" if v is None else v for v in values), _age(md.get("creationTimestamp"), now)]
        rows.append({"cells": cells, "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                                "metadata": md}})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": cols, "rows": rows}
