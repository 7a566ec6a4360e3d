"""Resource types the API serves → discovery entries and lookup by path, key or kind.

Built-in types are fixed; CRDs add and remove types at run time.  A type's `key` is the
kubectl spelling (`pods`, `daemonsets.apps`, `dynamographdeployments.nvidia.com`), used by the
store and by in-process components.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    group: str
    versions: tuple[str, ...]            # served versions, the storage version first
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    schemas: dict = field(default_factory=dict, compare=False, hash=False)  # version → openAPIV3Schema
    printer_columns: dict = field(default_factory=dict, compare=False, hash=False)  # version → columns
    builtin: bool = True

    @property
    def key(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def storage_version(self) -> str:
        return self.versions[0]

    def api_version(self, version: str | None = None) -> str:
        version = version or self.storage_version
        return f"{self.group}/{version}" if self.group else version


def _t(group: str, plural: str, kind: str, namespaced: bool, short: tuple[str, ...] = (),
       sub: tuple[str, ...] = (), version: str = "v1") -> ResourceType:
    return ResourceType(group, (version,), plural, kind, namespaced, kind.lower(), short, sub)


BUILTINS: tuple[ResourceType, ...] = (
    _t("", "namespaces", "Namespace", False, ("ns",), ("status",)),
    _t("", "pods", "Pod", True, ("po",), ("status", "log", "exec", "proxy", "attach", "portforward")),
    _t("", "configmaps", "ConfigMap", True, ("cm",)),
    _t("", "secrets", "Secret", True),
    _t("", "events", "Event", True, ("ev",)),
    _t("", "nodes", "Node", False, ("no",), ("status", "proxy")),
    _t("", "serviceaccounts", "ServiceAccount", True, ("sa",), ("token",)),
    _t("", "services", "Service", True, ("svc",), ("status", "proxy")),
    _t("apps", "daemonsets", "DaemonSet", True, ("ds",), ("status",)),
    _t("apps", "deployments", "Deployment", True, ("deploy",), ("status", "scale")),
    _t("apps", "replicasets", "ReplicaSet", True, ("rs",), ("status", "scale")),
    _t("", "replicationcontrollers", "ReplicationController", True, ("rc",), ("status", "scale")),
    _t("batch", "jobs", "Job", True, (), ("status",)),
    _t("rbac.authorization.k8s.io", "roles", "Role", True),
    _t("rbac.authorization.k8s.io", "rolebindings", "RoleBinding", True),
    _t("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", False),
    _t("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", False),
    _t("coordination.k8s.io", "leases", "Lease", True),
    _t("apiregistration.k8s.io", "apiservices", "APIService", False, (), ("status",)),
    ResourceType("authorization.k8s.io", ("v1",), "selfsubjectaccessreviews", "SelfSubjectAccessReview", False,
                 "selfsubjectaccessreview", verbs=("create",)),
    _t("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", False,
       ("crd", "crds"), ("status",)),
)

# Subresources answered by dedicated handlers; only these verbs make sense on them.
SUBRESOURCE_VERBS = {"status": ("get", "patch", "update"), "log": ("get",), "exec": ("create", "get"),
                     "attach": ("create", "get"),
                     "portforward": ("create", "get"), "proxy": ("get",), "scale": ("get", "patch", "update"), "token": ("create",)}


class ResourceTypes:
    """The live set of served types (thread-safe: CRDs change it from the HTTP thread)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._types: dict[str, ResourceType] = {t.key: t for t in BUILTINS}

    def add(self, rtype: ResourceType) -> None:
        with self._lock:
            self._types[rtype.key] = rtype

    def remove(self, key: str) -> None:
        with self._lock:
            self._types.pop(key, None)

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._types.values())

    def by_key(self, key: str) -> ResourceType | None:
        with self._lock:
            return self._types.get(key)

    def by_path(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self._lock:
            t = self._types.get(f"{plural}.{group}" if group else plural)
        return t if t is not None and version in t.versions else None

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        with self._lock:
            for t in self._types.values():
                if t.group == group and t.kind == kind and version in t.versions:
                    return t
        return None

    def groups(self) -> dict[str, list[str]]:
        """group → served versions (preferred first), for /apis."""
        out: dict[str, list[str]] = {}
        for t in self.all():
            if t.group:
                versions = out.setdefault(t.group, [])
                versions += [v for v in t.versions if v not in versions]
        return out
