"""Object rules the API server applies on write → name checks, defaults, immutable fields.

Kept apart from the store so the store only does bookkeeping (versions, events, deletion).
"""

from __future__ import annotations

import base64
import random
import re
from datetime import UTC, datetime

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Kinds whose names must be a DNS-1123 *label* (63 chars, no dots), as on a real server.
LABEL_NAMED = {"namespaces", "services"}
_LABEL_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
_SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_POD_UPDATE_RULE = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`, "
    "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to "
    "existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
    "previously negative)")


def timestamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def name_problems(resource_key: str, name: str) -> list[tuple[str, str, str]]:
    """422 causes for a bad `metadata.name` (empty list when it is fine)."""
    if not name:
        return [("FieldValueRequired", "metadata.name", "Required value: name or generateName is required")]
    if resource_key in LABEL_NAMED:
        if len(name) > 63 or not DNS1123_LABEL.match(name):
            return [("FieldValueInvalid", "metadata.name", f'Invalid value: "{name}": {_LABEL_RULE}')]
        return []
    if resource_key == "customresourcedefinitions.apiextensions.k8s.io":
        return []  # checked against spec.names by the CRD logic
    if len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        return [("FieldValueInvalid", "metadata.name", f'Invalid value: "{name}": {_SUBDOMAIN_RULE}')]
    return []


def generate_name(prefix: str, rng: random.Random) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's suffix alphabet (no vowels)
    return prefix[:58] + "".join(rng.choice(alphabet) for _ in range(5))


def apply_defaults(resource_key: str, obj: dict, rng: random.Random) -> None:
    """Fill the fields a real API server defaults on create."""
    spec = obj.setdefault("spec", {}) if resource_key in _HAS_SPEC else obj.get("spec")
    if resource_key == "pods":
        _default_pod(obj, spec)
    elif resource_key == "namespaces":
        spec.setdefault("finalizers", ["kubernetes"])
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        obj["status"] = {"phase": "Active"}
    elif resource_key == "secrets":
        string_data = obj.pop("stringData", None) or {}
        data = obj.setdefault("data", {}) or {}
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        obj["data"] = data
        obj.setdefault("type", "Opaque")
    elif resource_key == "services":
        spec.setdefault("type", "ClusterIP")
        if spec.get("clusterIP") is None:
            spec["clusterIP"] = f"10.96.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
        for port in spec.get("ports") or []:
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
        spec.setdefault("sessionAffinity", "None")
    elif resource_key in ("daemonsets.apps", "deployments.apps"):
        if resource_key == "deployments.apps":
            spec.setdefault("replicas", 1)
            obj.setdefault("status", {})
        else:  # DaemonSetStatus has four required counters; a fresh DaemonSet has scheduled nothing yet
            status = obj.setdefault("status", {})
            for counter in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"):
                status.setdefault(counter, 0)
    elif resource_key == "serviceaccounts":
        pass


_HAS_SPEC = {"pods", "namespaces", "services", "daemonsets.apps", "deployments.apps",
             "customresourcedefinitions.apiextensions.k8s.io"}


def _default_pod(obj: dict, spec: dict) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    for c in spec.get("containers") or []:
        image = c.get("image", "")
        tag = image.rsplit("/", 1)[-1]
        pull = "Always" if (":" not in tag or tag.endswith(":latest")) and "@" not in image else "IfNotPresent"
        c.setdefault("imagePullPolicy", pull)
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("resources", {})
        res = c["resources"]
        if res.get("limits") and not res.get("requests"):
            res["requests"] = dict(res["limits"])  # requests default to limits
    status = obj.setdefault("status", {})
    status.setdefault("phase", "Pending")


# Pod spec fields that may change after creation (everything else is immutable).
_MUTABLE_POD_SPEC = {"activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"}


def pod_update_problems(old: dict, new: dict) -> list[tuple[str, str, str]]:
    """422 causes when an update changes an immutable part of a pod's spec."""
    a, b = dict(old.get("spec") or {}), dict(new.get("spec") or {})
    for spec in (a, b):
        for k in _MUTABLE_POD_SPEC:
            spec.pop(k, None)
        spec["containers"] = [{k: v for k, v in c.items() if k != "image"} for c in spec.get("containers") or []]
    if a.get("nodeName") is None:
        b.pop("nodeName", None)  # binding sets it once
        a.pop("nodeName", None)
    if a != b:
        return [("FieldValueForbidden", "spec", _POD_UPDATE_RULE)]
    return []
