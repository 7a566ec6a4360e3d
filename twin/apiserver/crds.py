"""CustomResourceDefinitions → served resource types (and their removal, with their objects).

Conversion between served versions is the `None` strategy: objects are stored once and only
`apiVersion` changes with the version asked for — which is what a CRD without a conversion
webhook does.  Each version's `openAPIV3Schema` validates writes through that version.
"""

from __future__ import annotations

import copy

from .errors import ApiError
from .resources import ResourceType, ResourceTypes
from .store import Store

CRD_KEY = "customresourcedefinitions.apiextensions.k8s.io"


def crd_problems(obj: dict, old: dict | None) -> list[tuple[str, str, str]]:
    """422 causes for a CRD a real API server would refuse."""
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    group, plural = spec.get("group", ""), names.get("plural", "")
    causes = []
    if obj["metadata"].get("name") != f"{plural}.{group}":
        causes.append(("FieldValueInvalid", "metadata.name",
                       f'Invalid value: "{obj["metadata"].get("name")}": must be spec.names.plural+"."+spec.group'))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(("FieldValueNotSupported", "spec.scope",
                       f'Unsupported value: "{spec.get("scope")}": supported values: "Cluster", "Namespaced"'))
    versions = spec.get("versions") or []
    if not versions:
        causes.append(("FieldValueRequired", "spec.versions", "Required value: must have exactly one version marked as storage version"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(("FieldValueInvalid", "spec.versions",
                       "Invalid value: must have exactly one version marked as storage version"))
    if not names.get("kind"):
        causes.append(("FieldValueRequired", "spec.names.kind", "Required value"))
    return causes


def resource_type(crd: dict) -> ResourceType:
    spec = crd["spec"]
    names = spec["names"]
    versions = [v for v in spec["versions"] if v.get("served", True)]
    versions.sort(key=lambda v: not v.get("storage"))  # storage version first
    subresources = ("status",) if any((v.get("subresources") or {}).get("status") is not None for v in versions) else ()
    schemas = {v["name"]: (v.get("schema") or {}).get("openAPIV3Schema") or {} for v in versions}
    columns = {v["name"]: list(v.get("additionalPrinterColumns") or []) for v in versions}
    return ResourceType(spec["group"], tuple(v["name"] for v in versions), names["plural"], names["kind"],
                        spec["scope"] == "Namespaced", names.get("singular", names["kind"].lower()),
                        tuple(names.get("shortNames") or ()), subresources, schemas=schemas, printer_columns=columns,
                        builtin=False)


class CrdController:
    """Keeps the served types in step with the stored CRDs."""

    def __init__(self, store: Store, types: ResourceTypes) -> None:
        self.store, self.types = store, types
        store.admission.setdefault(CRD_KEY, []).append(crd_problems)
        store.subscribe(CRD_KEY, self._on_crd)

    def _on_crd(self, etype: str, crd: dict) -> None:
        spec = crd.get("spec") or {}
        key = f"{spec['names']['plural']}.{spec['group']}"
        if etype == "DELETED":
            self._drop(key)
            return
        self.types.add(resource_type(crd))
        if etype == "ADDED" or not (crd.get("status") or {}).get("conditions"):
            self._establish(crd)

    def _establish(self, crd: dict) -> None:
        status = {"acceptedNames": copy.deepcopy(crd["spec"]["names"]),
                  "storedVersions": [v["name"] for v in crd["spec"]["versions"] if v.get("storage")],
                  "conditions": [{"type": t, "status": "True", "reason": r, "message": m} for t, r, m in (
                      ("NamesAccepted", "NoConflicts", "no conflicts found"),
                      ("Established", "InitialNamesAccepted", "the initial names have been accepted"))]}
        self.store.patch(CRD_KEY, None, crd["metadata"]["name"], {"status": status}, subresource="status")

    def _drop(self, key: str) -> None:
        rtype = self.types.by_key(key)
        if rtype is None:
            return
        for obj in self.store.list(rtype):
            md = obj["metadata"]
            try:
                if md.get("finalizers"):
                    self.store.patch(rtype, md.get("namespace"), md["name"], {"metadata": {"finalizers": None}})
                self.store.delete(rtype, md.get("namespace"), md["name"])
            except ApiError:  # gone already (the finalizer patch may have completed the deletion)
                pass
        self.types.remove(key)
