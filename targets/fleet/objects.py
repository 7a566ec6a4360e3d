"""A fleet run → the Kubernetes objects it creates: the runner's ServiceAccount, its RBAC, one Job per node.

Pure functions (same inputs → same objects). The Role grants exactly what the catalog's steps do
in the test namespace (see `RULES`); the ClusterRole only reading nodes, which the live target
does once to check that its node exists. Each Job runs one pod, never retried (a failed node is a
result, not something to paper over), pinned to its node by node affinity on `metadata.name` (as
DaemonSets pin) and by the node's hostname label (for schedulers without affinity), tolerating
every taint, so a cordoned-by-taint GPU node is still tested.
"""

from __future__ import annotations

import hashlib
import re

NAME = "stepgraph-fleet"
RUN_LABEL = "stepgraph.dev/fleet-run"
NODE_ANNOTATION = "stepgraph.dev/node"
APP_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "runner"}
REPORTS_DIR = "/tmp/stepgraph-reports"

# What the steps do in the test namespace, verb by verb (steps/_cluster.py, k8s.py, topology.py,
# planner.py, power_agent.py and the live target): list/read/create/annotate/delete pods, exec
# probes into the agent and hostengine pods (the websocket upgrade is a GET; newer servers also
# check `create`), read planner logs, read the agent's metrics through the pod proxy, and
# create/read/delete the DGDs of Path A.
RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "create", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get", "create"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]},
    {"apiGroups": ["nvidia.com"], "resources": ["dynamographdeployments"], "verbs": ["get", "list", "create", "delete"]},
]
NODE_RULES = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]


def service_account(namespace: str) -> dict:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": NAME, "namespace": namespace, "labels": dict(APP_LABELS)}}


def role(namespace: str) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": NAME, "namespace": namespace, "labels": dict(APP_LABELS)}, "rules": RULES}


def role_binding(namespace: str) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": NAME, "namespace": namespace, "labels": dict(APP_LABELS)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}]}


def cluster_role(namespace: str) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": f"{NAME}-{namespace}-nodes", "labels": dict(APP_LABELS)}, "rules": NODE_RULES}


def cluster_role_binding(namespace: str) -> dict:
    name = f"{NAME}-{namespace}-nodes"
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": dict(APP_LABELS)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}]}


def job_name(run_id: str, node: str) -> str:
    """`stepgraph-<run>-<node>`, a DNS label (≤ 63): long or odd node names become a digest."""
    name = f"stepgraph-{run_id}-{node}"
    if len(name) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name):
        return name
    return f"stepgraph-{run_id}-{hashlib.sha256(node.encode()).hexdigest()[:12]}"


def job(run_id: str, node: str, hostname: str | None, namespace: str, image: str, run_args: list[str],
        env: dict[str, str], deadline_s: int, *, service_account: str = NAME) -> dict:
    """The Job that runs the catalog on `node`: one pod, no retries, pinned there."""
    labels = {**APP_LABELS, RUN_LABEL: run_id}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    container_env = [
        {"name": "STEPGRAPH_LIVE", "value": "1"},
        {"name": "STEPGRAPH_PIN_NODE", "value": "1"},  # every node carries the test label: pin by hostname
        {"name": "TEST_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        *({"name": k, "value": v} for k, v in sorted(env.items())),
    ]
    spec: dict = {
        "serviceAccountName": service_account,
        "restartPolicy": "Never",
        "affinity": affinity,
        "tolerations": [{"operator": "Exists"}],
        "containers": [{
            "name": "runner", "image": image,
            "command": ["stepgraph", "fleet", "node", "--reports", REPORTS_DIR, "--", *run_args],
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
