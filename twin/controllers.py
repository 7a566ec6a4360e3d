"""Workload objects → pods: minimal DaemonSet and Deployment controllers, garbage collection, and
the per-namespace `default` ServiceAccount.

DaemonSet: one pod per node whose labels match the template's nodeSelector (and whose taints the
template tolerates), named `<ds>-<5 chars>`, bound to that node directly; a changed template
(generation) replaces the pods; a deleted pod is recreated.  Deployment: `replicas` pods named
`<deploy>-<hash>-<5 chars>` (no ReplicaSet objects).  Deleting an owner deletes what it owns.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from .apiserver.errors import ApiError
from .apiserver.objects import generate_name
from .garbage_collector import GarbageCollector
from .node import Node
from .scheduler import tolerates


def _owner_ref(owner: dict) -> dict:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def _owned(store: Any, namespace: str, uid: str) -> list[dict]:
    return [p for p in store.list("pods", namespace)
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])]


def _template_hash(template: dict) -> str:
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


class Controllers:
    """All the twin's built-in controllers, wired to store events."""

    def __init__(self, store: Any, nodes: list[Node], rng: Any) -> None:
        self.store, self.nodes, self._rng = store, nodes, rng
        self.gc = GarbageCollector(store)
        store.subscribe("daemonsets.apps", lambda e, ds: self._daemonset(e, ds))
        store.subscribe("deployments.apps", lambda e, d: self._deployment(e, d))
        store.subscribe("pods", self._on_pod)
        store.subscribe("namespaces", self._on_namespace)

    # -- namespaces ------------------------------------------------------------------------
    def _on_namespace(self, etype: str, ns: dict) -> None:
        if etype == "ADDED":
            try:
                self.store.create("serviceaccounts", ns["metadata"]["name"], {"metadata": {"name": "default"}})
            except ApiError:
                pass  # created by hand already

    # -- pods changing → owners react ----------------------------------------------------------
    def _on_pod(self, etype: str, pod: dict) -> None:
        for ref in pod["metadata"].get("ownerReferences") or []:
            kind = {"DaemonSet": "daemonsets.apps", "Deployment": "deployments.apps"}.get(ref.get("kind"))
            if kind is None:
                continue
            try:
                owner = self.store.get(kind, pod["metadata"]["namespace"], ref["name"])
            except ApiError:
                continue
            if owner["metadata"]["uid"] == ref.get("uid") and not owner["metadata"].get("deletionTimestamp"):
                (self._daemonset if kind == "daemonsets.apps" else self._deployment)("MODIFIED", owner)

    # -- DaemonSet -------------------------------------------------------------------------
    def reconcile_daemonsets(self) -> None:
        """Re-place every DaemonSet's pods (after node labels or taints changed)."""
        for ds in self.store.list("daemonsets.apps"):
            try:
                self._daemonset("MODIFIED", ds)
            except ApiError:
                pass  # deleted meanwhile

    def _daemonset(self, etype: str, ds: dict) -> None:
        md, ns = ds["metadata"], ds["metadata"]["namespace"]
        if etype == "DELETED" or md.get("deletionTimestamp"):
            return  # what it owns is the garbage collector's to delete (or orphan)
        pods = [p for p in _owned(self.store, ns, md["uid"]) if not p["metadata"].get("deletionTimestamp")]
        template = (ds.get("spec") or {}).get("template") or {}
        tspec = template.get("spec") or {}
        want = [n for n in self.nodes if self._fits(n, tspec)]
        generation = str(md.get("generation", 1))
        for p in list(pods):  # a copy: stale and duplicate pods are removed from `pods` as we go
            node = p["spec"].get("nodeName")
            stale = p["metadata"].get("labels", {}).get("pod-template-generation") != generation
            if stale or node not in {n.name for n in want} or sum(q["spec"].get("nodeName") == node for q in pods) > 1:
                self._delete_all([p])
                pods.remove(p)
        have = {p["spec"].get("nodeName") for p in pods}
        for node in want:
            if node.name not in have:
                pod = self._pod_from(ds, template, md["name"] + "-")
                pod["metadata"]["labels"]["pod-template-generation"] = generation
                pod["spec"]["nodeName"] = node.name
                self.store.create("pods", ns, pod)
                pods.append(pod)
        self._ds_status(ds, len(want))

    def _ds_status(self, ds: dict, desired: int) -> None:
        md = ds["metadata"]
        pods = [p for p in _owned(self.store, md["namespace"], md["uid"]) if not p["metadata"].get("deletionTimestamp")]
        ready = sum(_ready(p) for p in pods)
        status = {"desiredNumberScheduled": desired, "currentNumberScheduled": len(pods), "numberMisscheduled": 0,
                  "numberReady": ready, "numberAvailable": ready, "updatedNumberScheduled": len(pods),
                  "observedGeneration": md.get("generation", 1)}
        if ready < desired:
            status["numberUnavailable"] = desired - ready
        if {k: v for k, v in (ds.get("status") or {}).items()} != status:
            self._patch_status("daemonsets.apps", ds, status)

    @staticmethod
    def _fits(node: Node, tspec: dict) -> bool:
        if any(node.config.labels.get(k) != v for k, v in (tspec.get("nodeSelector") or {}).items()):
            return False
        return all(tolerates(tspec.get("tolerations") or [], t) for t in node.config.taints
                   if t.get("effect") in ("NoSchedule", "NoExecute"))

    # -- Deployment ------------------------------------------------------------------------
    def _deployment(self, etype: str, dep: dict) -> None:
        md, ns = dep["metadata"], dep["metadata"]["namespace"]
        if etype == "DELETED" or md.get("deletionTimestamp"):
            return  # what it owns is the garbage collector's to delete (or orphan)
        pods = [p for p in _owned(self.store, ns, md["uid"]) if not p["metadata"].get("deletionTimestamp")]
        template = (dep.get("spec") or {}).get("template") or {}
        pth = _template_hash(template)
        stale = [p for p in pods if p["metadata"].get("labels", {}).get("pod-template-hash") != pth]
        self._delete_all(stale)
        pods = [p for p in pods if p not in stale]
        replicas = int((dep.get("spec") or {}).get("replicas", 1))
        self._delete_all(pods[replicas:])
        pods = pods[:replicas]
        for _ in range(replicas - len(pods)):
            pod = self._pod_from(dep, template, f"{md['name']}-{pth}-")
            pod["metadata"]["labels"]["pod-template-hash"] = pth
            pods.append(self.store.create("pods", ns, pod))
        ready = sum(_ready(p) for p in pods)
        available = "True" if ready >= replicas else "False"
        status = {"observedGeneration": md.get("generation", 1), "replicas": len(pods), "updatedReplicas": len(pods),
                  "readyReplicas": ready, "availableReplicas": ready,
                  "conditions": [{"type": "Available", "status": available,
                                  "reason": "MinimumReplicasAvailable" if available == "True" else "MinimumReplicasUnavailable",
                                  "message": "Deployment has minimum availability." if available == "True"
                                  else "Deployment does not have minimum availability."}]}
        if ready < replicas:
            status["unavailableReplicas"] = replicas - ready
        if (dep.get("status") or {}) != status:
            self._patch_status("deployments.apps", dep, status)

    # -- shared ----------------------------------------------------------------------------
    def _pod_from(self, owner: dict, template: dict, prefix: str) -> dict:
        meta = copy.deepcopy(template.get("metadata") or {})
        meta["labels"] = dict(meta.get("labels") or {})
        meta.update(name=generate_name(prefix, self._rng), ownerReferences=[_owner_ref(owner)])
        return {"metadata": meta, "spec": copy.deepcopy(template.get("spec") or {})}

    def _delete_all(self, pods: list[dict]) -> None:
        for p in pods:
            try:
                self.store.delete("pods", p["metadata"]["namespace"], p["metadata"]["name"])
            except ApiError:
                pass  # already gone

    def _patch_status(self, resource: str, obj: dict, status: dict) -> None:
        try:
            current = self.store.get(resource, obj["metadata"]["namespace"], obj["metadata"]["name"])
            current["status"] = status
            self.store.replace(resource, obj["metadata"]["namespace"], obj["metadata"]["name"], current,
                               subresource="status")
        except ApiError:
            pass  # deleted meanwhile


def _ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])
