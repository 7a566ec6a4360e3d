"""A DynamoGraphDeployment (v1alpha1, `spec.services.<Name>`) → its frontend, planner and worker pods.

A minimal stand-in for the Dynamo operator: enough of it for Path A. Each service becomes
`replicas` pods stamped with the operator labels of contract §2.2 (`…graph-deployment-name`,
`…component` = the service key, `…component-type`, `…sub-component-type`, `…namespace`,
`…component-pod`, `…worker-hash`), the service's `extraPodSpec` (nodeSelector, tolerations,
volumes, mainContainer) and `resources.limits.gpu` as `nvidia.com/gpu`. The planner gets
`DYN_PARENT_DGD_K8S_NAME` / `…_NAMESPACE`. Deleting the DGD deletes its pods (not its ConfigMaps).

Whether the DGD's own labels (e.g. `purpose=power-aware-multi-dgd-test`, which the live test's
pod selectors need) reach the pods is unverified upstream (contract §2.2 gap); here it is the
`propagate_dgd_labels` switch, on by default so the Path A fixtures find their pods.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from .planners import COMPONENT_LABEL, COMPONENT_TYPE_LABEL, DGD_LABEL, DGD_RESOURCE

SUB_COMPONENT_LABEL = "nvidia.com/dynamo-sub-component-type"
NAMESPACE_LABEL = "nvidia.com/dynamo-namespace"
COMPONENT_POD_LABEL = "nvidia.com/dynamo-component-pod"
WORKER_HASH_LABEL = "nvidia.com/dynamo-worker-hash"
PLANNER_SERVICE_ACCOUNT = "planner-serviceaccount"


def _short_hash(*parts: str, length: int = 5) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:length]


def render_pods(dgd: dict, propagate_dgd_labels: bool = True) -> list[dict]:
    """The pods a DGD should have (pure: same DGD → same pods, names included)."""
    meta = dgd["metadata"]
    name, namespace = meta["name"], meta["namespace"]
    owner = {"apiVersion": dgd.get("apiVersion", "nvidia.com/v1alpha1"), "kind": "DynamoGraphDeployment",
             "name": name, "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}
    pods = []
    for key, svc in sorted(((dgd.get("spec") or {}).get("services") or {}).items()):
        svc = svc or {}
        component_type = svc.get("componentType", "worker")
        labels = dict(meta.get("labels") or {}) if propagate_dgd_labels else {}
        labels.update({
            DGD_LABEL: name,
            COMPONENT_LABEL: key,
            COMPONENT_TYPE_LABEL: component_type,
            NAMESPACE_LABEL: f"{namespace}-{name}",
            COMPONENT_POD_LABEL: "true",
            WORKER_HASH_LABEL: _short_hash(name, key, str(svc.get("extraPodSpec")), length=10),
        })
        if svc.get("subComponentType"):
            labels[SUB_COMPONENT_LABEL] = svc["subComponentType"]
        for replica in range(int(svc.get("replicas", 1))):
            pods.append(_pod(name, namespace, key, svc, component_type, replica, labels, owner))
    return pods


def _pod(dgd: str, namespace: str, key: str, svc: dict, component_type: str, replica: int,
         labels: dict, owner: dict) -> dict:
    extra = svc.get("extraPodSpec") or {}
    main = dict(extra.get("mainContainer") or {})
    container: dict[str, Any] = {"name": "main", "image": main.get("image", "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.1")}
    for field in ("command", "args", "workingDir", "volumeMounts"):
        if field in main:
            container[field] = main[field]
    env = [{"name": "DYN_NAMESPACE", "value": f"{namespace}-{dgd}"},
           {"name": "DYN_PARENT_DGD_K8S_NAME", "value": dgd},
           {"name": "DYN_PARENT_DGD_K8S_NAMESPACE", "value": namespace}]
    container["env"] = env + list(main.get("env") or [])
    gpus = ((svc.get("resources") or {}).get("limits") or {}).get("gpu")
    if gpus is not None:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"nvidia.com/gpu": str(gpus)}}
    spec: dict[str, Any] = {"containers": [container], "restartPolicy": "Always"}
    for field in ("nodeSelector", "tolerations", "volumes", "affinity"):
        if field in extra:
            spec[field] = extra[field]
    if component_type == "planner":
        spec["serviceAccountName"] = PLANNER_SERVICE_ACCOUNT
    annotations = dict(svc.get("annotations") or {})
    name = f"{dgd}-{replica}-{key.lower()}-{_short_hash(dgd, key, str(replica))}"
    metadata = {"name": name, "namespace": namespace, "labels": dict(labels), "ownerReferences": [owner]}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


class Operator:
    """Watches DGDs in the store and keeps each one's pods in existence."""

    def __init__(self, store: Any, propagate_dgd_labels: bool = True) -> None:
        self.store = store
        self.propagate_dgd_labels = propagate_dgd_labels
        self._lock = threading.RLock()
        self._unsubscribe = store.subscribe(DGD_RESOURCE, self._on_event)
        self._unsubscribe_pods = store.subscribe("pods", self._on_pod_event)

    def close(self) -> None:
        self._unsubscribe()
        self._unsubscribe_pods()

    def _on_event(self, event_type: str, dgd: dict) -> None:
        if event_type == "DELETED":
            self._delete_pods_of(dgd)
        elif dgd["metadata"].get("deletionTimestamp") is None:
            self.reconcile(dgd)

    def _on_pod_event(self, event_type: str, pod: dict) -> None:
        """A deleted pod of a live DGD is replaced (the operator's controller loop)."""
        if event_type != "DELETED":
            return
        dgd_name = (pod["metadata"].get("labels") or {}).get(DGD_LABEL)
        owned = any(o.get("kind") == "DynamoGraphDeployment" for o in pod["metadata"].get("ownerReferences") or [])
        if not dgd_name or not owned:
            return
        try:
            dgd = self.store.get(DGD_RESOURCE, pod["metadata"]["namespace"], dgd_name)
        except Exception:
            return
        if dgd["metadata"].get("deletionTimestamp") is None:
            self.reconcile(dgd)

    def reconcile(self, dgd: dict) -> list[str]:
        """Create the DGD's missing pods; returns the names created."""
        created = []
        with self._lock:
            namespace = dgd["metadata"]["namespace"]
            existing = {p["metadata"]["name"] for p in self.store.list(
                "pods", namespace, label_selector=f"{DGD_LABEL}={dgd['metadata']['name']}")}
            for pod in render_pods(dgd, self.propagate_dgd_labels):
                if pod["metadata"]["name"] not in existing:
                    try:
                        self.store.create("pods", namespace, pod)
                    except Exception:
                        continue
                    created.append(pod["metadata"]["name"])
        return created

    def _delete_pods_of(self, dgd: dict) -> None:
        namespace = dgd["metadata"]["namespace"]
        for pod in self.store.list("pods", namespace, label_selector=f"{DGD_LABEL}={dgd['metadata']['name']}", copy=False):
            owners = pod["metadata"].get("ownerReferences") or []
            if any(o.get("kind") == "DynamoGraphDeployment" for o in owners):
                try:
                    self.store.delete("pods", namespace, pod["metadata"]["name"], copy=False)
                except Exception:
                    continue
