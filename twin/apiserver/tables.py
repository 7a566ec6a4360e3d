"""Objects → `meta.k8s.io/v1` Table responses, so `kubectl get` prints real columns.

kubectl asks for `application/json;as=Table;…` and falls back to plain JSON; we answer with a
Table for GET, LIST and WATCH, with the columns the real server's printers give each served kind
(wide-only columns at priority 1), custom resources their CRD's `additionalPrinterColumns`
(simple `.a.b` paths), anything else NAME / AGE. `includeObject` decides what each row carries
(`Metadata` by default, `Object` for `--sort-by`, `None`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from .resources import ResourceType


def wants_table(accept: str) -> bool:
    return "as=Table" in accept and "g=meta.k8s.io" in accept


def _age(created: str | None, now: float) -> str:
    if not created:
        return "<unknown>"
    return _duration(max(0, int(now - datetime.fromisoformat(created).timestamp())))


def _duration(seconds: int) -> str:
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


def _apiservice_backend(api: dict) -> str:
    ref = _spec(api).get("service")
    return f"{ref.get('namespace')}/{ref.get('name')}" if isinstance(ref, dict) else "Local"


def _availability(api: dict) -> str:
    for c in _status(api).get("conditions") or []:
        if c.get("type") == "Available":
            return c["status"] if c.get("status") == "True" or not c.get("reason") else f"{c['status']} ({c['reason']})"
    return "Unknown"


def _path(obj: dict, json_path: str) -> Any:
    cur: Any = obj
    for part in json_path.strip(".").split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


def _containers(obj: dict) -> list[dict]:
    return ((((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [])


def _selector(obj: dict) -> str:
    sel = (obj.get("spec") or {}).get("selector") or {}
    labels = sel.get("matchLabels", sel) if isinstance(sel, dict) else {}
    return ",".join(f"{k}={v}" for k, v in labels.items() if isinstance(v, str)) or "<none>"


def _wide(obj: dict) -> list[Any]:
    cs = _containers(obj)
    return [",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs), _selector(obj)]


def _status(obj: dict) -> dict:
    return obj.get("status") or {}


def _spec(obj: dict) -> dict:
    return obj.get("spec") or {}


def _ports(svc: dict) -> str:
    ports = [f"{p.get('port')}{':' + str(p['nodePort']) if p.get('nodePort') else ''}/{p.get('protocol', 'TCP')}"
             for p in _spec(svc).get("ports") or []]
    return ",".join(ports) or "<none>"


def _job_status(job: dict) -> str:
    for c in _status(job).get("conditions") or []:
        if c.get("status") == "True" and c.get("type") in ("Complete", "Failed", "Suspended"):
            return c["type"]
    return "Running"


def _job_duration(job: dict, now: float) -> str:
    start = _status(job).get("startTime")
    if not start:
        return ""
    end = _status(job).get("completionTime")
    stop = datetime.fromisoformat(end).timestamp() if end else now
    return _duration(max(0, int(stop - datetime.fromisoformat(start).timestamp())))


WIDE = [_col("Containers", priority=1), _col("Images", priority=1), _col("Selector", priority=1)]
Printer = tuple[list[dict], Callable[[dict, float], list[Any]]]  # columns after Name; cells after the name

PRINTERS: dict[str, Printer] = {
    "pods": ([_col("Ready"), _col("Status"), _col("Restarts", "integer"), _col("Age"), _col("IP", priority=1),
              _col("Node", priority=1)],
             lambda o, now: [*_pod_cells(o), _age(o["metadata"].get("creationTimestamp"), now),
                             _status(o).get("podIP", "<none>"), _spec(o).get("nodeName", "<none>")]),
    "deployments.apps": ([_col("Ready"), _col("Up-to-date", "integer"), _col("Available", "integer"), _col("Age"), *WIDE],
                         lambda o, now: [f"{_status(o).get('readyReplicas', 0)}/{_spec(o).get('replicas', 1)}",
                                         _status(o).get("updatedReplicas", 0), _status(o).get("availableReplicas", 0),
                                         _age(o["metadata"].get("creationTimestamp"), now), *_wide(o)]),
    "replicasets.apps": ([_col("Desired", "integer"), _col("Current", "integer"), _col("Ready", "integer"), _col("Age"),
                          *WIDE],
                         lambda o, now: [_spec(o).get("replicas", 1), _status(o).get("replicas", 0),
                                         _status(o).get("readyReplicas", 0),
                                         _age(o["metadata"].get("creationTimestamp"), now), *_wide(o)]),
    "daemonsets.apps": ([_col("Desired", "integer"), _col("Current", "integer"), _col("Ready", "integer"),
                         _col("Up-to-date", "integer"), _col("Available", "integer"), _col("Node Selector"), _col("Age"),
                         *WIDE],
                        lambda o, now: [_status(o).get("desiredNumberScheduled", 0),
                                        _status(o).get("currentNumberScheduled", 0), _status(o).get("numberReady", 0),
                                        _status(o).get("updatedNumberScheduled", 0), _status(o).get("numberAvailable", 0),
                                        ",".join(f"{k}={v}" for k, v in ((_spec(o).get("template") or {}).get("spec") or {})
                                                 .get("nodeSelector", {}).items()) or "<none>",
                                        _age(o["metadata"].get("creationTimestamp"), now), *_wide(o)]),
    "jobs.batch": ([_col("Status"), _col("Completions"), _col("Duration"), _col("Age"), *WIDE],
                   lambda o, now: [_job_status(o), f"{_status(o).get('succeeded', 0)}/{_spec(o).get('completions', 1)}",
                                   _job_duration(o, now), _age(o["metadata"].get("creationTimestamp"), now), *_wide(o)]),
    "services": ([_col("Type"), _col("Cluster-IP"), _col("External-IP"), _col("Port(s)"), _col("Age"),
                  _col("Selector", priority=1)],
                 lambda o, now: [_spec(o).get("type", "ClusterIP"), _spec(o).get("clusterIP", "<none>"), "<none>",
                                 _ports(o), _age(o["metadata"].get("creationTimestamp"), now),
                                 ",".join(f"{k}={v}" for k, v in (_spec(o).get("selector") or {}).items()) or "<none>"]),
    "namespaces": ([_col("Status"), _col("Age")],
                   lambda o, now: [_status(o).get("phase", "Active"), _age(o["metadata"].get("creationTimestamp"), now)]),
    "nodes": ([_col("Status"), _col("Roles"), _col("Age"), _col("Version"), _col("Internal-IP", priority=1)],
              lambda o, now: ["Ready" if any(c.get("type") == "Ready" and c.get("status") == "True"
                                             for c in _status(o).get("conditions") or []) else "NotReady",
                              "<none>", _age(o["metadata"].get("creationTimestamp"), now),
                              (_status(o).get("nodeInfo") or {}).get("kubeletVersion", ""),
                              next((a["address"] for a in _status(o).get("addresses") or []
                                    if a.get("type") == "InternalIP"), "<none>")]),
    "configmaps": ([_col("Data", "integer"), _col("Age")],
                   lambda o, now: [len(o.get("data") or {}) + len(o.get("binaryData") or {}),
                                   _age(o["metadata"].get("creationTimestamp"), now)]),
    "secrets": ([_col("Type"), _col("Data", "integer"), _col("Age")],
                lambda o, now: [o.get("type", "Opaque"), len(o.get("data") or {}),
                                _age(o["metadata"].get("creationTimestamp"), now)]),
    "serviceaccounts": ([_col("Secrets", "integer"), _col("Age")],
                        lambda o, now: [len(o.get("secrets") or []), _age(o["metadata"].get("creationTimestamp"), now)]),
    "leases.coordination.k8s.io": ([_col("Holder"), _col("Age")],
                                   lambda o, now: [_spec(o).get("holderIdentity", ""),
                                                   _age(o["metadata"].get("creationTimestamp"), now)]),
    "apiservices.apiregistration.k8s.io": ([_col("Service"), _col("Available"), _col("Age")],
                                           lambda o, now: [_apiservice_backend(o), _availability(o),
                                                           _age(o["metadata"].get("creationTimestamp"), now)]),
    "rolebindings.rbac.authorization.k8s.io": (
        [_col("Role"), _col("Age")],
        lambda o, now: [f"{(o.get('roleRef') or {}).get('kind')}/{(o.get('roleRef') or {}).get('name')}",
                        _age(o["metadata"].get("creationTimestamp"), now)]),
}
PRINTERS["replicationcontrollers"] = PRINTERS["replicasets.apps"]
PRINTERS["clusterrolebindings.rbac.authorization.k8s.io"] = PRINTERS["rolebindings.rbac.authorization.k8s.io"]
for _created_at in ("roles.rbac.authorization.k8s.io", "clusterroles.rbac.authorization.k8s.io",
                    "customresourcedefinitions.apiextensions.k8s.io"):
    PRINTERS[_created_at] = ([_col("Created At", "date")], lambda o, now: [o["metadata"].get("creationTimestamp", "")])


def columns(rtype: ResourceType, printer_columns: list[dict] | None = None) -> list[dict]:
    if rtype.key in PRINTERS:
        return [_col("Name", fmt="name"), *PRINTERS[rtype.key][0]]
    extra = [c for c in printer_columns or [] if c.get("name") != "Age"]
    return [_col("Name", fmt="name"), *(_col(c["name"], c.get("type", "string")) for c in extra), _col("Age")]


def row(rtype: ResourceType, obj: dict, now: float, printer_columns: list[dict] | None = None,
        include: str = "Metadata") -> dict:
    md = obj["metadata"]
    if rtype.key in PRINTERS:
        cells = [md["name"], *PRINTERS[rtype.key][1](obj, now)]
    else:
        values = [_path(obj, c.get("jsonPath", "")) for c in printer_columns or [] if c.get("name") != "Age"]
        cells = [md["name"], *("<none>" if v is None else v for v in values), _age(md.get("creationTimestamp"), now)]
    out: dict = {"cells": cells}
    if include == "Object":
        out["object"] = obj
    elif include != "None":
        out["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": md}
    return out


def table(rtype: ResourceType, items: list[dict], resource_version: str, now: float,
          printer_columns: list[dict] | None = None, include: str = "Metadata", headers: bool = True) -> dict:
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": columns(rtype, printer_columns) if headers else [],
            "rows": [row(rtype, obj, now, printer_columns, include) for obj in items]}
