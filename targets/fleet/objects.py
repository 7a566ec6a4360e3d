"""A fleet run → the Kubernetes objects it creates: the runners' ServiceAccount and RBAC, one
namespace and one Job per node.

Pure functions (same inputs → same objects). Every name carries the run's id, so two fleet runs
on one cluster never share (or delete) an object. Each node's runner creates what its scenarios
need in a namespace of its own (`stepgraph-<run>-<node>`): the catalog's pods have fixed names,
and runners side by side in one namespace would meet on them and take each other's objects for
leftovers. The agent and hostengine stay in the test namespace, where the runner pods run too.

The runners get exactly what the catalog's steps do (see the rules below): in the test
namespace, reach the system under test (`SYSTEM_RULES`, a Role); in their own namespaces, make and
remove workloads (`WORK_RULES`, one ClusterRole granted per namespace by a RoleBinding there, so
it holds nowhere else); cluster-wide only reading nodes, which the live target does once to check
that its node exists. Each Job runs one pod, never retried (a failed node is a result, not
something to paper over), pinned to its node by node affinity on `metadata.name` (as DaemonSets
pin) and by the node's hostname label (for schedulers without affinity), tolerating every taint,
so a cordoned-by-taint GPU node is still tested.
"""

from __future__ import annotations

import hashlib
import re

NAME = "stepgraph-fleet"
RUN_LABEL = "stepgraph.dev/fleet-run"
NODE_ANNOTATION = "stepgraph.dev/node"
APP_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "runner"}

# What the steps do to the system under test in the test namespace (steps/_cluster.py,
# power_agent.py, faults.py): find the agent and hostengine pods, exec the NVML/DCGM/metrics probes
# into them (the websocket upgrade is a GET; newer servers also check `create`), read the agent's
# metrics through the pod proxy, restart them (delete: the DaemonSet makes a new one), and stop
# and start the agent by patching its DaemonSet's node selector.
SYSTEM_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "delete"]},
    {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get", "create"]},
    {"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]},
    {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get", "list", "patch"]},
]
# What the steps do in the run's own namespace (k8s.py, topology.py, planner.py, _probe_pod.py,
# the live target): create/read/annotate/delete the workloads and probe pods, read planner and
# probe logs, planner metrics through the proxy, Path A's DGDs, and read the namespace itself
# (the live target checks it exists; a RoleBinding there grants `get` on that namespace only).
WORK_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "create", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get", "create"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
    {"apiGroups": ["nvidia.com"], "resources": ["dynamographdeployments"], "verbs": ["get", "list", "create", "delete"]},
]
NODE_RULES = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]


def _labels(run_id: str) -> dict[str, str]:
    return {**APP_LABELS, RUN_LABEL: run_id}


def account_name(run_id: str) -> str:
    """The name of the run's ServiceAccount, Role and bindings."""
    return f"{NAME}-{run_id}"


def service_account(run_id: str, namespace: str) -> dict:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": account_name(run_id), "namespace": namespace, "labels": _labels(run_id)}}


def role(run_id: str, namespace: str) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": account_name(run_id), "namespace": namespace, "labels": _labels(run_id)},
            "rules": SYSTEM_RULES}


def _subjects(run_id: str, namespace: str) -> list[dict]:
    return [{"kind": "ServiceAccount", "name": account_name(run_id), "namespace": namespace}]


def role_binding(run_id: str, namespace: str) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": account_name(run_id), "namespace": namespace, "labels": _labels(run_id)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account_name(run_id)},
            "subjects": _subjects(run_id, namespace)}


def cluster_role(run_id: str) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": f"{account_name(run_id)}-nodes", "labels": _labels(run_id)}, "rules": NODE_RULES}


def cluster_role_binding(run_id: str, namespace: str) -> dict:
    name = f"{account_name(run_id)}-nodes"
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": _labels(run_id)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": _subjects(run_id, namespace)}


def work_cluster_role(run_id: str) -> dict:
    """The runners' rights in their own namespaces; it holds only where a RoleBinding grants it."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": f"{account_name(run_id)}-work", "labels": _labels(run_id)}, "rules": WORK_RULES}


def work_role_binding(run_id: str, run_namespace: str, namespace: str, account: str | None = None) -> dict:
    """`work_cluster_role` granted in one runner's namespace to the runners' ServiceAccount."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": account_name(run_id), "namespace": run_namespace, "labels": _labels(run_id)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": f"{account_name(run_id)}-work"},
            "subjects": [{"kind": "ServiceAccount", "name": account or account_name(run_id), "namespace": namespace}]}


def run_namespace(run_id: str, node: str) -> dict:
    """The namespace of the runner of `node`: everything its scenarios create goes there."""
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": job_name(run_id, node), "labels": _labels(run_id),
                         "annotations": {NODE_ANNOTATION: node}}}


def job_name(run_id: str, node: str) -> str:
    """`stepgraph-<run>-<node>`, a DNS label (≤ 63): long or odd node names become a digest."""
    name = f"stepgraph-{run_id}-{node}"
    if len(name) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name):
        return name
    return f"stepgraph-{run_id}-{hashlib.sha256(node.encode()).hexdigest()[:12]}"


def job(run_id: str, node: str, hostname: str | None, namespace: str, image: str, run_args: list[str],
        env: dict[str, str], deadline_s: int, *, service_account: str | None = None) -> dict:
    """The Job that runs the catalog on `node`: one pod, no retries, pinned there; what it creates
    goes into the node's run namespace (`run_namespace`)."""
    labels = _labels(run_id)
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    container_env = [
        {"name": "STEPGRAPH_LIVE", "value": "1"},
        {"name": "STEPGRAPH_PIN_NODE", "value": "1"},  # every node carries the test label: pin by hostname
        {"name": "TEST_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "STEPGRAPH_RUN_NAMESPACE", "value": job_name(run_id, node)},
        *({"name": k, "value": v} for k, v in sorted(env.items())),
    ]
    spec: dict = {
        "serviceAccountName": service_account or account_name(run_id),
        "restartPolicy": "Never",
        "affinity": affinity,
        "tolerations": [{"operator": "Exists"}],
        "containers": [{
            "name": "runner", "image": image,
            "command": ["stepgraph", "fleet", "node", *run_args],
            "env": container_env,
            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
        }],
    }
    if hostname:
        spec["nodeSelector"] = {"kubernetes.io/hostname": hostname}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": job_name(run_id, node), "namespace": namespace, "labels": labels,
                         "annotations": {NODE_ANNOTATION: node}},
            "spec": {"backoffLimit": 0, "activeDeadlineSeconds": deadline_s, "ttlSecondsAfterFinished": 3600,
                     "template": {"metadata": {"labels": labels, "annotations": {NODE_ANNOTATION: node}},
                                  "spec": spec}}}
