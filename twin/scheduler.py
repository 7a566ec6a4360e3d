"""Unbound pods → a node: nodeSelector, required node affinity, taints/tolerations and
`nvidia.com/gpu` without over-commit.

Binding also claims the GPUs from the node's device plugin (seeded choice, Finding #8), so two
pods can never be promised the same GPU.  A pod that fits nowhere stays Pending with a
`PodScheduled=False/Unschedulable` condition and a `FailedScheduling` Warning event, and is
retried whenever capacity may have freed (a pod deleted or finished, a node changed).
"""

from __future__ import annotations

from typing import Any

from .apiserver.objects import timestamp
from .node import GPU_RESOURCE, Node, gpu_request

SCHEDULER = "default-scheduler"


def tolerates(tolerations: list[dict] | None, taint: dict) -> bool:
    for t in tolerations or []:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t["key"] == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def selects_node(pod_spec: dict, node_name: str, labels: dict[str, str]) -> bool:
    """The pod's `nodeSelector` and required node affinity both accept the node (the affinity's
    terms are ORed, each term's expressions ANDed; preferred affinity only scores, and the twin
    does not score)."""
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    fields = {"metadata.name": node_name}
    return any(_term_matches(term, labels, fields) for term in required.get("nodeSelectorTerms") or [])


def _term_matches(term: dict, labels: dict[str, str], fields: dict[str, str]) -> bool:
    expressions, field_expressions = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not field_expressions:
        return False  # an empty term selects no node
    return all(_requirement(e, labels) for e in expressions) and all(_requirement(e, fields) for e in field_expressions)


def _requirement(expr: dict, values: dict[str, str]) -> bool:
    key: str = expr.get("key") or ""
    op, wanted = expr.get("operator"), expr.get("values") or []
    present = key in values
    if op == "In":
        return present and values[key] in wanted
    if op == "NotIn":
        return not present or values[key] not in wanted
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(wanted) == 1:
        try:
            have, bound = int(values[key]), int(wanted[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def why_not(node: Node, pod: dict) -> str | None:
    """None if the pod fits the node, else the scheduler's reason phrase for it."""
    spec = pod.get("spec") or {}
    if not selects_node(spec, node.name, node.config.labels):
        return "node(s) didn't match Pod's node affinity/selector"
    for taint in node.config.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(spec.get("tolerations"), taint):
            value = f"{taint['key']}: {taint['value']}" if taint.get("value") else taint["key"]
            return f"node(s) had untolerated taint {{{value}}}"
    if gpu_request(pod) > len(node.allocator.free()):
        return f"Insufficient {GPU_RESOURCE}"
    return None


class Scheduler:
    """Binds pending pods to the twin's nodes through the store."""

    def __init__(self, store: Any, nodes: list[Node], clock: Any) -> None:
        self.store, self.nodes, self.clock = store, nodes, clock
        self._reported: dict[str, str] = {}  # pod uid → last FailedScheduling message
        store.subscribe("pods", self._on_pod)

    def _on_pod(self, etype: str, pod: dict) -> None:
        md, spec = pod["metadata"], pod.get("spec") or {}
        if etype == "DELETED" or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self._reported.pop(md["uid"], None)
            for node in self.nodes:  # a gone or finished pod holds no devices (kubelet agrees, idempotently)
                node.allocator.release(md["uid"])
            self.retry()  # capacity may have freed
            return
        if not spec.get("nodeName") and not md.get("deletionTimestamp") and spec.get("schedulerName", SCHEDULER) == SCHEDULER:
            self.schedule(pod)

    def retry(self) -> None:
        for pod in self.store.list("pods", field_selector="spec.nodeName="):
            if not pod["metadata"].get("deletionTimestamp"):
                self.schedule(pod)

    def schedule(self, pod: dict) -> bool:
        md = pod["metadata"]
        reasons: dict[str, int] = {}
        for node in self.nodes:
            reason = why_not(node, pod)
            if reason is None and node.allocator.allocate(md["uid"], gpu_request(pod)) is not None:
                self._bind(pod, node)
                return True
            key = reason or f"Insufficient {GPU_RESOURCE}"
            reasons[key] = reasons.get(key, 0) + 1
        detail = " ".join(f"{n} {r}." for r, n in sorted(reasons.items()))
        message = f"0/{len(self.nodes)} nodes are available: {detail}"
        if self._reported.get(md["uid"]) != message:
            self._reported[md["uid"]] = message
            self._condition(pod, "False", "Unschedulable", message)
            self.store.record_event(pod, "FailedScheduling", message, type="Warning", component=SCHEDULER)
        return False

    def _bind(self, pod: dict, node: Node) -> None:
        md = pod["metadata"]
        self._reported.pop(md["uid"], None)
        self.store.patch("pods", md["namespace"], md["name"], {"spec": {"nodeName": node.name}}, copy=False)
        self._condition(pod, "True", None, None)
        self.store.record_event(pod, "Scheduled", f"Successfully assigned {md['namespace']}/{md['name']} to {node.name}",
                                component=SCHEDULER)

    def _condition(self, pod: dict, status: str, reason: str | None, message: str | None) -> None:
        cond = {"type": "PodScheduled", "status": status, "lastProbeTime": None,
                "lastTransitionTime": _now(self.store)}
        if reason:
            cond.update(reason=reason, message=message)
        md = pod["metadata"]
        current = self.store.get("pods", md["namespace"], md["name"], copy=False)
        conditions = [c for c in (current.get("status") or {}).get("conditions") or [] if c["type"] != "PodScheduled"]
        self.store.patch("pods", md["namespace"], md["name"], {"status": {"conditions": [cond, *conditions]}},
                         subresource="status", copy=False)


def _now(store: Any) -> str:
    return timestamp(store.clock.wall())
