"""Object rules the API server applies on write → name checks, defaults, immutable fields.

Kept apart from the store so the store only does bookkeeping (versions, events, deletion).
"""

from __future__ import annotations

import base64
import functools
import math
import random
import re
import time
from typing import Any

from .copies import copy_tree
from .errors import invalid
from .resources import ResourceType

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


# Kinds whose DELETE without a propagationPolicy orphans their dependents (kept so for backward
# compatibility by the real server; everything else defaults to Background).
DEFAULT_PROPAGATION = {"replicationcontrollers": "Orphan", "jobs.batch": "Orphan"}


def timestamp(epoch: float) -> str:
    """RFC 3339 to the second, as the API server writes creationTimestamp and the like. Every
    write stamps its object (and an Event several times), and on the virtual clock many writes
    fall in one second: that second's text is formatted once (~0.3 µs a call instead of ~6 µs)."""
    return _second(math.floor(epoch))


@functools.lru_cache(maxsize=64)
def _second(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))


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


_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_VALUE_RULE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
               "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
               "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
_KEY_RULE = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
             "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
MAX_ANNOTATIONS_BYTES = 256 * 1024


def _key_ok(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED.match(name))


def metadata_problems(md: dict, passed: dict | None = None) -> list[tuple[str, str, str]]:
    """422 causes for label keys/values and annotation keys/size a real server would refuse;
    `passed`: metadata that passed this check, whose labels or annotations `md` may share."""
    causes = []
    labels = md.get("labels") or {}
    if passed is not None and labels is passed.get("labels"):
        labels = {}
    for key, value in labels.items():
        if not _key_ok(str(key)):
            causes.append(("FieldValueInvalid", "metadata.labels", f'Invalid value: "{key}": {_KEY_RULE}'))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append(("FieldValueInvalid", "metadata.labels", f'Invalid value: "{value}": {_VALUE_RULE}'))
    annotations = md.get("annotations") or {}
    if passed is not None and annotations is passed.get("annotations"):
        return causes
    for key in annotations:
        if not _key_ok(str(key)):
            causes.append(("FieldValueInvalid", "metadata.annotations", f'Invalid value: "{key}": {_KEY_RULE}'))
    size = sum(len(str(k)) + len(str(v)) for k, v in annotations.items())
    if size > MAX_ANNOTATIONS_BYTES:
        causes.append(("FieldValueTooLong", "metadata.annotations",
                       f"Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes"))
    return causes


def generate_name(prefix: str, rng: random.Random) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's suffix alphabet (no vowels)
    return prefix[:58] + "".join(rng.choice(alphabet) for _ in range(5))


def apply_defaults(resource_key: str, obj: dict, rng: random.Random, now: str) -> None:
    """Fill the fields a real API server defaults on create (`now`: the creation timestamp)."""
    spec: Any = obj.setdefault("spec", {}) if resource_key in _HAS_SPEC else obj.get("spec")
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
        if spec["clusterIP"] != "None":
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        obj["status"] = {"loadBalancer": {}}
    elif resource_key in WORKLOADS:
        _default_workload(resource_key, obj, spec)
    elif resource_key == APISERVICES:
        _default_apiservice(obj, now)


APISERVICES = "apiservices.apiregistration.k8s.io"


def _default_apiservice(obj: dict, now: str) -> None:
    """A created APIService starts with no status; one served locally (no `service`) is Available
    at once, as the aggregator's create strategy makes it; a Service's port defaults to 443."""
    spec = obj.get("spec") or {}
    if isinstance(spec.get("service"), dict):
        spec["service"].setdefault("port", 443)
        obj["status"] = {}
    else:
        obj["status"] = {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": now,
                                         "reason": "Local", "message": "Local APIServices are always available"}]}


_HAS_SPEC = {"pods", "namespaces", "services", "customresourcedefinitions.apiextensions.k8s.io"}
# Kinds that carry a pod template at spec.template.
WORKLOADS = {"daemonsets.apps", "deployments.apps", "replicasets.apps", "replicationcontrollers", "jobs.batch"}
_HAS_SPEC |= WORKLOADS


def _default_workload(resource_key: str, obj: dict, spec: dict) -> None:
    """The defaults the real server's apps/batch/core defaulting functions give these kinds."""
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        _default_pod_spec(template["spec"])
    status = obj.setdefault("status", {})
    if resource_key in ("deployments.apps", "replicasets.apps", "replicationcontrollers"):
        spec.setdefault("replicas", 1)
    if resource_key == "deployments.apps":
        spec.setdefault("strategy", {"type": "RollingUpdate"})
        if spec["strategy"].get("type") == "RollingUpdate":
            spec["strategy"].setdefault("rollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"})
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
    elif resource_key == "daemonsets.apps":
        spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
        if spec["updateStrategy"].get("type") == "RollingUpdate":
            spec["updateStrategy"].setdefault("rollingUpdate", {"maxUnavailable": 1, "maxSurge": 0})
        spec.setdefault("revisionHistoryLimit", 10)
        # DaemonSetStatus has four required counters; a fresh DaemonSet has scheduled nothing yet
        for counter in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"):
            status.setdefault(counter, 0)
    elif resource_key == "replicationcontrollers":
        labels = ((template or {}).get("metadata") or {}).get("labels") or {}
        spec.setdefault("selector", dict(labels))
        obj["metadata"].setdefault("labels", dict(labels))
        status.setdefault("replicas", 0)
    elif resource_key == "replicasets.apps":
        status.setdefault("replicas", 0)
    elif resource_key == "jobs.batch":
        for k, v in (("parallelism", 1), ("completions", 1), ("backoffLimit", 6), ("completionMode", "NonIndexed"),
                     ("suspend", False), ("podReplacementPolicy", "TerminatingOrFailed"), ("manualSelector", False)):
            spec.setdefault(k, v)


def _default_pod_spec(spec: dict) -> None:
    """Pod-spec defaults shared by pods and pod templates."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
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


def assign_owned_selector(resource_key: str, obj: dict) -> None:
    """Once the uid exists: a Job's generated selector and the template labels that match it."""
    spec = obj.get("spec") or {}
    if resource_key != "jobs.batch" or spec.get("manualSelector"):
        return
    md = obj["metadata"]
    labels = {"batch.kubernetes.io/controller-uid": md["uid"], "batch.kubernetes.io/job-name": md["name"],
              "controller-uid": md["uid"], "job-name": md["name"]}
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": md["uid"]}}
    template = spec.setdefault("template", {})
    template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)


def kind_problems(resource_key: str, obj: dict, passed: dict | None = None) -> list[tuple[str, str, str]]:
    """422 causes the real server's per-kind validation gives beyond the schema. They read the
    spec (and an APIService's name, which no update changes): none when `obj` shares its spec
    with `passed`, an object that passed them."""
    if passed is not None and "spec" in obj and obj["spec"] is passed.get("spec"):
        return []
    causes = []
    if resource_key == "pods":
        causes += _image_problems((obj.get("spec") or {}), "spec")
        causes += _node_affinity_problems((obj.get("spec") or {}), "spec")
    elif resource_key in WORKLOADS:
        template_spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        causes += _image_problems(template_spec, "spec.template.spec")
        causes += _node_affinity_problems(template_spec, "spec.template.spec")
    if resource_key == APISERVICES:
        spec = obj.get("spec") or {}
        required = f"{spec.get('version', '')}.{spec.get('group', '')}"
        if obj["metadata"].get("name") != required:
            causes.append(("FieldValueInvalid", "metadata.name",
                           f'Invalid value: "{obj["metadata"].get("name")}": must be '
                           f'`spec.version+"."+spec.group`: "{required}"'))
    if resource_key == "jobs.batch":
        policy = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("restartPolicy")
        if policy not in ("OnFailure", "Never"):
            causes.append(("FieldValueNotSupported", "spec.template.spec.restartPolicy",
                           f'Unsupported value: "{policy}": supported values: "OnFailure", "Never"'))
    return causes


_OPERATORS = ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")


def _node_affinity_problems(pod_spec: dict, where: str) -> list[tuple[str, str, str]]:
    """The server's checks of required node affinity (the schema types the fields, not their rules)."""
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, dict):
        return []
    path = f"{where}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return [("FieldValueRequired", path, "Required value: must have at least one node selector term")]
    causes = []
    for i, term in enumerate(terms):
        for list_name in ("matchExpressions", "matchFields"):
            for j, expr in enumerate((term or {}).get(list_name) or []):
                at = f"{path}[{i}].{list_name}[{j}]"
                op, values = expr.get("operator"), expr.get("values") or []
                if list_name == "matchFields" and expr.get("key") != "metadata.name":
                    causes.append(("FieldValueInvalid", f"{at}.key",
                                   f'Invalid value: "{expr.get("key")}": not a valid field selector key'))
                if op not in _OPERATORS:
                    supported = ", ".join(f'"{o}"' for o in _OPERATORS)
                    causes.append(("FieldValueNotSupported", f"{at}.operator",
                                   f'Unsupported value: "{op}": supported values: {supported}'))
                elif op in ("In", "NotIn") and not values:
                    causes.append(("FieldValueRequired", f"{at}.values",
                                   "Required value: must be specified when `operator` is 'In' or 'NotIn'"))
                elif op in ("Exists", "DoesNotExist") and values:
                    causes.append(("FieldValueForbidden", f"{at}.values",
                                   "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
                elif op in ("Gt", "Lt") and (len(values) != 1 or not str(values[0]).lstrip("-").isdigit()):
                    causes.append(("FieldValueRequired", f"{at}.values",
                                   "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"))
    return causes


def _image_problems(pod_spec: dict, where: str) -> list[tuple[str, str, str]]:
    """The schema leaves `image` optional (for templates others fill in), but the server's pod
    validation requires one in every container of a pod and of a workload's template."""
    causes = []
    for list_name in ("initContainers", "containers"):
        containers = pod_spec.get(list_name)
        for i, container in enumerate(containers if isinstance(containers, list) else ()):
            if isinstance(container, dict) and not container.get("image"):
                causes.append(("FieldValueRequired", f"{where}.{list_name}[{i}].image", "Required value"))
    return causes


def _default_pod(obj: dict, spec: dict) -> None:
    _default_pod_spec(spec)
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    status = obj.setdefault("status", {})
    status.setdefault("phase", "Pending")


# Pod spec fields that may change after creation (everything else is immutable).
_MUTABLE_POD_SPEC = {"activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"}


def pod_update_problems(old: dict, new: dict) -> list[tuple[str, str, str]]:
    """422 causes when an update changes an immutable part of a pod's spec."""
    if new.get("spec") is old.get("spec"):  # the update left the spec as stored (a metadata patch)
        return []
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


def service_update_problems(old: dict, new: dict) -> list[tuple[str, str, str]]:
    """An update that leaves the cluster IP out keeps it (as the real server fills it back in);
    one that changes it is refused with the real server's 422."""
    was, spec = old.get("spec") or {}, new.setdefault("spec", {})
    if not spec.get("clusterIP") and not spec.get("clusterIPs"):
        for k in ("clusterIP", "clusterIPs"):
            if k in was:
                spec[k] = copy_tree(was[k])
        return []
    wanted = spec.get("clusterIPs") or [spec.get("clusterIP")]
    if was.get("clusterIP") and wanted[0] != was["clusterIP"]:
        shown = ", ".join(f'"{ip}"' for ip in wanted)
        return [("FieldValueInvalid", "spec.clusterIPs[0]", f"Invalid value: []string{{{shown}}}: may not change once set")]
    return []


def updated(rtype: ResourceType, old: dict, body: dict, subresource: str | None, *, patched: bool = False) -> dict:
    """The object an update would store: identity from `old`, spec/status per subresource.

    What `body` holds of `old` itself (the parts a patch left alone) stays shared, and so does
    the status an update keeps: no write changes a stored object in place. The rest is copied —
    unless `patched`: a patch's result is made of new containers, copied leaves and parts of
    `old`, so it holds nothing of anyone else's — and so is all of a workload, whose defaulting
    below writes into its spec and status. The metadata is always a copy: the write sets fields on it."""
    if rtype.key in WORKLOADS:
        new = copy_tree(body)
    else:
        new = {k: v if (patched or v is old.get(k)) and k != "metadata" else copy_tree(v) for k, v in body.items()}
    new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
    md = new.setdefault("metadata", {})
    for k in ("uid", "creationTimestamp", "namespace", "name", "deletionTimestamp",
              "deletionGracePeriodSeconds", "generation", "resourceVersion"):
        if k in old["metadata"]:
            md[k] = old["metadata"][k]
        else:
            md.pop(k, None)
    has_status = "status" in rtype.subresources
    if subresource == "status":
        # Metadata and spec stay as they were, as on a real server: the metadata is a new dict of
        # the stored values (the write sets resourceVersion, managedFields on it, never inside them).
        kept = copy_tree(old) if rtype.key in WORKLOADS else {**old, "metadata": dict(old["metadata"])}
        kept["status"] = new.get("status", {})
        return kept
    if has_status and "status" in old:
        new["status"] = copy_tree(old["status"]) if rtype.key in WORKLOADS else old["status"]
    elif has_status:
        new.pop("status", None)
    if rtype.key == "pods" and (problems := pod_update_problems(old, new)):
        raise invalid(rtype.kind, rtype.group, md["name"], problems)
    if rtype.key in WORKLOADS:  # defaulting runs on every write, so an update cannot drop them
        _default_workload(rtype.key, new, new.setdefault("spec", {}))
    if rtype.key == "services" and (problems := service_update_problems(old, new)):
        raise invalid(rtype.kind, rtype.group, md["name"], problems)
    if md.get("deletionTimestamp") and len(md.get("finalizers") or []) > len(old["metadata"].get("finalizers") or []):
        raise invalid(rtype.kind, rtype.group, md["name"], [(
            "FieldValueForbidden", "metadata.finalizers",
            "Forbidden: no new finalizers can be added if the object is being deleted")])
    return new


def event_body(involved: dict, reason: str, message: str, type: str, component: str, wall: float,
               rng: random.Random) -> dict:
    """A core/v1 Event about `involved`, as the kubelet or scheduler would post it."""
    md = involved["metadata"]
    ns = md.get("namespace") or "default"
    now = timestamp(wall)
    body = {"metadata": {"name": f"{md['name']}.{rng.getrandbits(64):016x}", "namespace": ns},
            "involvedObject": {"kind": involved.get("kind"), "namespace": md.get("namespace"),
                               "name": md["name"], "uid": md.get("uid"),
                               "apiVersion": involved.get("apiVersion"),
                               "resourceVersion": md.get("resourceVersion")},
            "reason": reason, "message": message, "type": type, "count": 1,
            "source": {"component": component}, "reportingComponent": component,
            "firstTimestamp": now, "lastTimestamp": now}
    return body
