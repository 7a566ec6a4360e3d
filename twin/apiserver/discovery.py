"""Served resource types → the discovery documents (`/version`, `/api`, `/apis`, resource lists)."""

from __future__ import annotations

from .resources import SUBRESOURCE_VERBS, ResourceTypes

VERSION_INFO = {"major": "1", "minor": "31", "gitVersion": "v1.31.0-stepgraph-twin",
                "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.22.0", "compiler": "gc",
                "platform": "linux/amd64"}


def api_versions(address: str) -> dict:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]}


def _group_doc(name: str, versions: list[str]) -> dict:
    gv = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gv, "preferredVersion": gv[0]}


def api_group_list(types: ResourceTypes) -> dict:
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group_doc(g, v) for g, v in sorted(types.groups().items())]}


def api_group(types: ResourceTypes, group: str) -> dict | None:
    versions = types.groups().get(group)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions)}


def resource_list(types: ResourceTypes, group: str, version: str) -> dict | None:
    served = [t for t in types.all() if t.group == group and version in t.versions]
    if not served:
        return None
    resources = []
    for t in sorted(served, key=lambda t: t.plural):
        entry = {"name": t.plural, "singularName": t.singular or t.kind.lower(), "namespaced": t.namespaced,
                 "kind": t.kind, "verbs": list(t.verbs)}
        if t.short_names:
            entry["shortNames"] = list(t.short_names)
        resources.append(entry)
        for sub in t.subresources:
            resources.append({"name": f"{t.plural}/{sub}", "singularName": "", "namespaced": t.namespaced,
                              "kind": t.kind, "verbs": list(SUBRESOURCE_VERBS.get(sub, ("get",)))})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": resources}
