"""Workload objects → pods: the DaemonSet, Deployment → ReplicaSet, ReplicationController and Job
controllers, the per-namespace `default` ServiceAccount and `kube-root-ca.crt` ConfigMap (the API
server's CA, for pods that verify it), and (in garbage_collector.py) the owner-reference garbage
collector.

DaemonSet: one pod per node whose labels match the template's nodeSelector (and whose taints the
template tolerates), named `<ds>-<5 chars>`, bound to that node directly; a changed template
(generation) replaces the pods; a deleted pod is recreated.  Deployment: one ReplicaSet per pod
template, `<deploy>-<pod-template-hash>`, the current one scaled to `replicas` and older ones to
0 (kept up to `revisionHistoryLimit`); a ReplicaSet (or ReplicationController) keeps `replicas`
active pods, `<rs>-<5 chars>`.  Job: runs pods until `completions` have succeeded (at most
`parallelism` at a time) or more than `backoffLimit` have failed, then reports Complete / Failed.
What a deleted owner owns is the garbage collector's to delete, or to orphan.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from .apiserver import objects
from .apiserver.errors import ApiError
from .apiserver.objects import generate_name
from .garbage_collector import GarbageCollector
from .node import Node
from .scheduler import selects_node, tolerates


def _owner_ref(owner: dict) -> dict:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def _owned(store: Any, namespace: str, uid: str, resource: str = "pods") -> list[dict]:
    return [p for p in store.list(resource, namespace)
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])]


def _template_hash(template: dict) -> str:
    """The `pod-template-hash` label: FNV-32a of the template, its decimal digits mapped onto the
    apiserver's vowel-free alphabet, as the real deployment controller spells it."""
    digest = 0x811C9DC5
    for byte in json.dumps(template, sort_keys=True).encode():
        digest = ((digest ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(SAFE_ALPHABET[ord(ch) % len(SAFE_ALPHABET)] for ch in str(digest))


KUBERNETES_SERVICE_IP = "10.96.0.1"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
DESCRIPTION = "kubernetes.io/description"
ROOT_CA_DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
                       "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
                       "guaranteed across distributions of Kubernetes clusters.")
CONTROLLER_MANAGER = "kube-controller-manager"
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
REVISION = "deployment.kubernetes.io/revision"
OWNER_KINDS = {"DaemonSet": "daemonsets.apps", "Deployment": "deployments.apps", "ReplicaSet": "replicasets.apps",
               "ReplicationController": "replicationcontrollers", "Job": "jobs.batch"}


class _Placed:
    """One DaemonSet's live (not terminating) pods: by name → (node, ready), by node → names, and
    how many are ready. Kept from the pod events, so that one pod's change costs the controller
    O(1) — listing (and so copying) every pod of the namespace at each event made starting N
    nodes cost O(N²)."""

    def __init__(self) -> None:
        self.pods: dict[str, tuple[str, bool]] = {}
        self.by_node: dict[str, set[str]] = {}
        self.ready = 0

    def put(self, name: str, node: str, ready: bool) -> None:
        self.drop(name)
        self.pods[name] = (node, ready)
        self.by_node.setdefault(node, set()).add(name)
        self.ready += ready

    def drop(self, name: str) -> None:
        found = self.pods.pop(name, None)
        if found is not None:
            node, ready = found
            self.by_node[node].discard(name)
            if not self.by_node[node]:
                del self.by_node[node]
            self.ready -= ready

    def on(self, node: str) -> set[str]:
        return self.by_node.get(node, set())


class Controllers:
    """All the twin's built-in controllers, wired to store events."""

    def __init__(self, store: Any, nodes: list[Node], rng: Any, root_ca: Callable[[], str] | None = None) -> None:
        self.store, self.nodes, self._rng = store, nodes, rng
        self._root_ca = root_ca
        self._node_named = {n.name: n for n in nodes}
        self._placed: dict[str, _Placed] = {}     # DaemonSet uid → its live pods
        self._desired: dict[str, int] = {}        # DaemonSet uid → how many nodes it fits
        self._synced: dict[str, int] = {}         # DaemonSet uid → the generation last placed
        self.gc = GarbageCollector(store)
        store.subscribe("daemonsets.apps", lambda e, ds: self._daemonset(e, ds))
        store.subscribe("deployments.apps", lambda e, d: self._deployment(e, d))
        store.subscribe("replicasets.apps", lambda e, rs: self._on_owned("replicasets.apps", rs, e))
        store.subscribe("replicationcontrollers", lambda e, rc: self._replicas("replicationcontrollers", e, rc))
        store.subscribe("jobs.batch", lambda e, job: self._job(e, job))
        store.subscribe("pods", self._on_pod)
        store.subscribe("namespaces", self._on_namespace)
        if root_ca is not None:
            store.subscribe("configmaps", self._on_configmap)
        store.subscribe(objects.APISERVICES, lambda e, svc: self._apiservice(e, svc))
        store.subscribe("services", lambda e, svc: self._apiservices_of(svc))

    # -- namespaces ------------------------------------------------------------------------
    def _on_namespace(self, etype: str, ns: dict) -> None:
        if etype != "ADDED":
            return
        name = ns["metadata"]["name"]
        bootstrap: list[tuple[str, dict[str, Any]]] = [("serviceaccounts", {"metadata": {"name": "default"}})]
        if name == "default":  # the API server's own Service, as every cluster has it
            bootstrap.append(("services", {
                "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {"clusterIP": KUBERNETES_SERVICE_IP, "ports": [
                    {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}}))
        for resource, body in bootstrap:
            try:
                self.store.create(resource, name, body)
            except ApiError:
                pass  # created by hand already
        self._publish_root_ca(name)

    # -- the root-CA publisher: `kube-root-ca.crt` in every active namespace, kept as published --
    def _root_ca_data(self) -> dict:
        assert self._root_ca is not None
        return {"ca.crt": self._root_ca()}

    def _publish_root_ca(self, namespace: str) -> None:
        if self._root_ca is None:
            return
        try:  # a terminating namespace refuses new content (403), as it refuses the real publisher
            self.store.create("configmaps", namespace, {
                "metadata": {"name": ROOT_CA_CONFIGMAP, "annotations": {DESCRIPTION: ROOT_CA_DESCRIPTION}},
                "data": self._root_ca_data()})
        except ApiError:
            pass  # the namespace is gone or terminating, or the ConfigMap exists (MODIFIED keeps it right)

    def _on_configmap(self, etype: str, cm: dict) -> None:
        md = cm["metadata"]
        if md["name"] != ROOT_CA_CONFIGMAP:
            return
        if etype == "DELETED":
            self._publish_root_ca(md["namespace"])
        elif cm.get("data") != self._root_ca_data() and not md.get("deletionTimestamp"):
            try:  # someone changed the bundle: the publisher puts the CA back, as the real one does
                self.store.patch("configmaps", md["namespace"], md["name"],
                                 [{"op": "replace" if "data" in cm else "add", "path": "/data",
                                   "value": self._root_ca_data()}],
                                 patch_type="json", field_manager=CONTROLLER_MANAGER)
            except ApiError:
                pass  # deleted meanwhile: the DELETED event republishes it

    # -- APIService availability: the twin proxies to no aggregated server ---------------------
    def _apiservices_of(self, service: dict) -> None:
        md = service["metadata"]
        for api in self.store.list(objects.APISERVICES):
            ref = (api.get("spec") or {}).get("service") or {}
            if (ref.get("namespace"), ref.get("name")) == (md["namespace"], md["name"]):
                self._apiservice("MODIFIED", api)

    def _apiservice(self, etype: str, api: dict) -> None:
        ref = (api.get("spec") or {}).get("service")
        if etype == "DELETED" or not isinstance(ref, dict):
            return  # a local one was made Available when it was created
        name, ns = ref.get("name", ""), ref.get("namespace", "")
        try:
            self.store.get("services", ns, name)
        except ApiError:
            reason, message = "ServiceNotFound", f'service/{name} in "{ns}" is not present'
        else:  # the twin keeps no Endpoints, so a Service never has any to proxy to
            reason, message = "EndpointsNotFound", f'cannot find endpoints for service/{name} in "{ns}"'
        conditions = (api.get("status") or {}).get("conditions") or []
        old: dict = next((c for c in conditions if c.get("type") == "Available"), {})
        if (old.get("status"), old.get("reason"), old.get("message")) == ("False", reason, message):
            return
        since = old.get("lastTransitionTime") if old.get("status") == "False" else None
        available = {"type": "Available", "status": "False",
                     "lastTransitionTime": since or objects.timestamp(self.store.clock.wall()),
                     "reason": reason, "message": message}
        api = {**api, "metadata": {**api["metadata"], "namespace": None}}
        self._patch_status(objects.APISERVICES, api, {"conditions": [available]})

    # -- pods changing → owners react ----------------------------------------------------------
    def _on_pod(self, etype: str, pod: dict) -> None:
        self._on_owned("pods", pod, etype)

    def _on_owned(self, resource: str, obj: dict, etype: str) -> None:
        """A pod (or ReplicaSet) changed: its controlling owner reconciles; a ReplicaSet itself too."""
        if resource == "replicasets.apps":
            self._replicas("replicasets.apps", etype, obj)
        for ref in obj["metadata"].get("ownerReferences") or []:
            kind = OWNER_KINDS.get(ref.get("kind"))
            if kind is None or not ref.get("controller"):
                continue
            try:
                owner = self.store.get(kind, obj["metadata"]["namespace"], ref["name"])
            except ApiError:
                continue
            if owner["metadata"]["uid"] == ref.get("uid") and not owner["metadata"].get("deletionTimestamp"):
                if kind == "daemonsets.apps" and resource == "pods":
                    self._daemonset_pod(etype, obj, owner)
                else:
                    self._reconcile(kind, owner)

    def _reconcile(self, kind: str, owner: dict) -> None:
        if kind == "daemonsets.apps":
            self._daemonset("MODIFIED", owner)
        elif kind == "deployments.apps":
            self._deployment("MODIFIED", owner)
        elif kind == "jobs.batch":
            self._job("MODIFIED", owner)
        else:
            self._replicas(kind, "MODIFIED", owner)

    # -- DaemonSet -------------------------------------------------------------------------
    # A DaemonSet is placed as a whole (every node it fits gets one pod) when it is created, its
    # template changes (generation) or the nodes change; after that each pod event is handled for
    # its own node only, from the `_Placed` index, and the status is kept from the index's counts.
    def reconcile_daemonsets(self) -> None:
        """Re-place every DaemonSet's pods (after node labels or taints changed)."""
        for ds in self.store.list("daemonsets.apps"):
            try:
                self._daemonset("MODIFIED", ds, force=True)
            except ApiError:
                pass  # deleted meanwhile

    def _daemonset(self, etype: str, ds: dict, *, force: bool = False) -> None:
        md, ns = ds["metadata"], ds["metadata"]["namespace"]
        uid, generation = md["uid"], int(md.get("generation", 1))
        if etype == "DELETED" or md.get("deletionTimestamp"):
            for index in (self._placed, self._desired, self._synced):
                index.pop(uid, None)
            return  # what it owns is the garbage collector's to delete (or orphan)
        if not force and self._synced.get(uid) == generation:
            return  # its status or metadata changed, not what it places
        self._synced[uid] = generation  # first: the pod events below see the DaemonSet as placed
        placed = self._placed[uid] = _Placed()
        pods = [p for p in _owned(self.store, ns, uid) if not p["metadata"].get("deletionTimestamp")]
        for p in pods:
            placed.put(p["metadata"]["name"], p["spec"].get("nodeName") or "", _ready(p))
        template = (ds.get("spec") or {}).get("template") or {}
        tspec = template.get("spec") or {}
        want = {n.name for n in self.nodes if self._fits(n, tspec)}
        self._desired[uid] = len(want)
        for p in pods:
            node = p["spec"].get("nodeName") or ""
            if p["metadata"]["name"] in placed.pods and self._misplaced(p, placed, node in want, str(generation)):
                placed.drop(p["metadata"]["name"])
                self._delete("pods", p)
        for node in self.nodes:
            if node.name in want and not placed.on(node.name):
                self._place(ds, template, node.name, str(generation))
        self._ds_status(ds)

    @staticmethod
    def _misplaced(pod: dict, placed: _Placed, wanted: bool, generation: str) -> bool:
        """Stale (an older template), on a node the DaemonSet no longer fits, or a second on its node."""
        stale = (pod["metadata"].get("labels") or {}).get("pod-template-generation") != generation
        node = pod["spec"].get("nodeName") or ""
        return stale or not wanted or min(placed.on(node)) != pod["metadata"]["name"]

    def _daemonset_pod(self, etype: str, pod: dict, ds: dict) -> None:
        """One of its pods changed: update the index; put that one node right; update the status."""
        uid, name = ds["metadata"]["uid"], pod["metadata"]["name"]
        if self._synced.get(uid) is None:
            self._daemonset("MODIFIED", ds)
            return
        placed = self._placed[uid]
        node = pod["spec"].get("nodeName") or ""
        if etype == "DELETED" or pod["metadata"].get("deletionTimestamp"):
            placed.drop(name)
        else:
            placed.put(name, node, _ready(pod))
        template = (ds.get("spec") or {}).get("template") or {}
        generation = str(ds["metadata"].get("generation", 1))
        fits = node in self._node_named and self._fits(self._node_named[node], template.get("spec") or {})
        if name in placed.pods and self._misplaced(pod, placed, fits, generation):
            placed.drop(name)
            self._delete("pods", pod)
        if fits and not placed.on(node):
            self._place(ds, template, node, generation)
        self._ds_status(ds)

    def _place(self, ds: dict, template: dict, node: str, generation: str) -> None:
        pod = self._pod_from(ds, template, ds["metadata"]["name"] + "-")
        pod["metadata"]["labels"]["pod-template-generation"] = generation
        pod["spec"]["nodeName"] = node
        created = self.store.create("pods", ds["metadata"]["namespace"], pod)
        # Into the index now: the store delivers the pod's own event only after the event being
        # handled, and a deletion queued before it must not place a second pod on the node.
        self._placed[ds["metadata"]["uid"]].put(created["metadata"]["name"], node, False)

    def _ds_status(self, ds: dict) -> None:
        md = ds["metadata"]
        placed, desired = self._placed.get(md["uid"], _Placed()), self._desired.get(md["uid"], 0)
        current, ready = len(placed.pods), placed.ready
        status = {"desiredNumberScheduled": desired, "currentNumberScheduled": current, "numberMisscheduled": 0,
                  "numberReady": ready, "numberAvailable": ready, "updatedNumberScheduled": current,
                  "observedGeneration": md.get("generation", 1)}
        if ready < desired:
            status["numberUnavailable"] = desired - ready
        if {k: v for k, v in (ds.get("status") or {}).items()} != status:
            self._patch_status("daemonsets.apps", ds, status)

    @staticmethod
    def _fits(node: Node, tspec: dict) -> bool:
        if not selects_node(tspec, node.name, node.config.labels):
            return False
        return all(tolerates(tspec.get("tolerations") or [], t) for t in node.config.taints
                   if t.get("effect") in ("NoSchedule", "NoExecute"))

    # -- Deployment → ReplicaSets ---------------------------------------------------------------
    def _deployment(self, etype: str, dep: dict) -> None:
        md, ns, spec = dep["metadata"], dep["metadata"]["namespace"], dep.get("spec") or {}
        if etype == "DELETED" or md.get("deletionTimestamp"):
            return
        template = copy.deepcopy(spec.get("template") or {})
        pth = _template_hash(template)
        owned = _owned(self.store, ns, md["uid"], "replicasets.apps")
        current = next((rs for rs in owned if (rs["metadata"].get("labels") or {}).get("pod-template-hash") == pth), None)
        replicas = int(spec.get("replicas", 1))
        revisions = [int((rs["metadata"].get("annotations") or {}).get(REVISION, "0")) for rs in owned]
        if current is None:
            template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = pth
            selector = copy.deepcopy(spec.get("selector") or {})
            selector.setdefault("matchLabels", {})["pod-template-hash"] = pth
            labels = dict(template["metadata"]["labels"])
            current = self.store.create("replicasets.apps", ns, {
                "metadata": {"name": f"{md['name']}-{pth}", "labels": labels, "ownerReferences": [_owner_ref(dep)],
                             "annotations": {REVISION: str(max(revisions, default=0) + 1)}},
                "spec": {"replicas": replicas, "selector": selector, "template": template}})
        elif int(current["spec"].get("replicas", 1)) != replicas:
            current = self._scale("replicasets.apps", current, replicas)
        old = [rs for rs in owned if rs["metadata"]["uid"] != current["metadata"]["uid"]]
        for rs in old:
            if int(rs["spec"].get("replicas", 1)) != 0:
                self._scale("replicasets.apps", rs, 0)
        keep = int(spec.get("revisionHistoryLimit", 10))
        old.sort(key=lambda rs: int((rs["metadata"].get("annotations") or {}).get(REVISION, "0")))
        for rs in old[:max(0, len(old) - keep)]:
            self._delete("replicasets.apps", rs)
        self._deployment_status(dep, current, _owned(self.store, ns, md["uid"], "replicasets.apps"), replicas)

    def _scale(self, resource: str, obj: dict, replicas: int) -> dict:
        md = obj["metadata"]
        return self.store.patch(resource, md["namespace"], md["name"], {"spec": {"replicas": replicas}})

    def _deployment_status(self, dep: dict, current: dict, owned: list[dict], replicas: int) -> None:
        def total(key: str) -> int:
            return sum(int((rs.get("status") or {}).get(key, 0)) for rs in owned)
        available = total("availableReplicas")
        updated = int((current.get("status") or {}).get("replicas", 0))
        ok = available >= replicas
        status = {"observedGeneration": dep["metadata"].get("generation", 1), "replicas": total("replicas"),
                  "updatedReplicas": updated, "readyReplicas": total("readyReplicas"), "availableReplicas": available,
                  "conditions": [
                      {"type": "Available", "status": "True" if ok else "False",
                       "reason": "MinimumReplicasAvailable" if ok else "MinimumReplicasUnavailable",
                       "message": "Deployment has minimum availability." if ok
                       else "Deployment does not have minimum availability."},
                      {"type": "Progressing", "status": "True",
                       "reason": "NewReplicaSetAvailable" if ok and updated == replicas else "ReplicaSetUpdated",
                       "message": f'ReplicaSet "{current["metadata"]["name"]}" '
                                  + ("has successfully progressed." if ok and updated == replicas else "is progressing.")}]}
        if replicas > available:
            status["unavailableReplicas"] = replicas - available
        for key in ("readyReplicas", "availableReplicas", "updatedReplicas", "replicas"):
            if not status[key]:
                del status[key]  # zero counters are omitted, as the real status encodes them
        self._patch_status_if_changed("deployments.apps", dep, status)

    # -- ReplicaSet / ReplicationController -------------------------------------------------------
    def _replicas(self, resource: str, etype: str, owner: dict) -> None:
        md, ns, spec = owner["metadata"], owner["metadata"]["namespace"], owner.get("spec") or {}
        if etype == "DELETED" or md.get("deletionTimestamp"):
            return
        pods = [p for p in _owned(self.store, ns, md["uid"]) if _active(p)]
        replicas = int(spec.get("replicas", 1))
        surplus = sorted(pods, key=lambda p: (_ready(p), p["metadata"]["creationTimestamp"]))[:max(0, len(pods) - replicas)]
        self._delete_all(surplus)
        pods = [p for p in pods if p not in surplus]
        template = spec.get("template") or {}
        for _ in range(replicas - len(pods)):
            pods.append(self.store.create("pods", ns, self._pod_from(owner, template, md["name"] + "-")))
        ready = sum(_ready(p) for p in pods)
        status = {"replicas": len(pods), "fullyLabeledReplicas": len(pods), "readyReplicas": ready,
                  "availableReplicas": ready, "observedGeneration": md.get("generation", 1)}
        for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
            if not status[key]:
                del status[key]
        self._patch_status_if_changed(resource, owner, status)

    # -- Job -------------------------------------------------------------------------------
    def _job(self, etype: str, job: dict) -> None:
        md, ns, spec = job["metadata"], job["metadata"]["namespace"], job.get("spec") or {}
        status = copy.deepcopy(job.get("status") or {})
        if etype == "DELETED" or md.get("deletionTimestamp") or spec.get("suspend") or _finished(status):
            return
        pods = _owned(self.store, ns, md["uid"])
        phases = [(p.get("status") or {}).get("phase") for p in pods]
        active = [p for p in pods if _active(p)]
        succeeded, failed = phases.count("Succeeded"), phases.count("Failed")
        completions, now = int(spec.get("completions", 1)), objects.timestamp(self.store.clock.wall())
        status.setdefault("startTime", now)
        condition = None
        if succeeded >= completions:
            condition = {"type": "Complete", "reason": "", "message": ""}
            status["completionTime"] = now
        elif failed > int(spec.get("backoffLimit", 6)):
            condition = {"type": "Failed", "reason": "BackoffLimitExceeded",
                         "message": "Job has reached the specified backoff limit"}
        if condition is not None:
            self._delete_all(active)
            active = []
            first = {**condition, "type": "SuccessCriteriaMet" if condition["type"] == "Complete" else "FailureTarget"}
            status["conditions"] = [{**c, "status": "True", "lastProbeTime": now, "lastTransitionTime": now}
                                    for c in (first, condition)]
        else:
            wanted = min(int(spec.get("parallelism", 1)), completions - succeeded) - len(active)
            template = spec.get("template") or {}
            for _ in range(max(0, wanted)):
                active.append(self.store.create("pods", ns, self._pod_from(job, template, md["name"] + "-")))
        status.update(active=len(active), succeeded=succeeded, failed=failed, ready=sum(_ready(p) for p in active),
                      terminating=sum(1 for p in pods if p["metadata"].get("deletionTimestamp")),
                      uncountedTerminatedPods={})
        for key in ("active", "succeeded", "failed"):
            if not status[key]:
                del status[key]
        self._patch_status_if_changed("jobs.batch", job, status)

    # -- shared ----------------------------------------------------------------------------
    def _pod_from(self, owner: dict, template: dict, prefix: str) -> dict:
        meta = copy.deepcopy(template.get("metadata") or {})
        meta["labels"] = dict(meta.get("labels") or {})
        meta.update(name=generate_name(prefix, self._rng), ownerReferences=[_owner_ref(owner)])
        return {"metadata": meta, "spec": copy.deepcopy(template.get("spec") or {})}

    def _delete_all(self, pods: list[dict]) -> None:
        for p in pods:
            self._delete("pods", p)

    def _delete(self, resource: str, obj: dict) -> None:
        try:
            self.store.delete(resource, obj["metadata"]["namespace"], obj["metadata"]["name"], copy=False)
        except ApiError:
            pass  # already gone

    def _patch_status_if_changed(self, resource: str, obj: dict, status: dict) -> None:
        if (obj.get("status") or {}) != status:
            self._patch_status(resource, obj, status)

    def _patch_status(self, resource: str, obj: dict, status: dict) -> None:
        try:
            current = self.store.get(resource, obj["metadata"]["namespace"], obj["metadata"]["name"])
            current["status"] = status
            self.store.replace(resource, obj["metadata"]["namespace"], obj["metadata"]["name"], current,
                               subresource="status")
        except ApiError:
            pass  # deleted meanwhile


def _active(pod: dict) -> bool:
    """Counted as a replica: neither terminating nor finished."""
    return not pod["metadata"].get("deletionTimestamp") and \
        (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _finished(job_status: dict) -> bool:
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in job_status.get("conditions") or [])


def _ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])
