"""A base URL → a kubeconfig file that kubectl and the official client both accept."""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML

CONTEXT = "stepgraph-twin"


def kubeconfig(base_url: str, namespace: str = "default") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": base_url}}],
        "users": [{"name": CONTEXT, "user": {"token": "stepgraph-twin"}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: Path, base_url: str, namespace: str = "default") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        YAML(typ="safe", pure=True).dump(kubeconfig(base_url, namespace), fh)
    return path
