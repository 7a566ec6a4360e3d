"""Fixtures for the API-server tests: a started twin and official-client APIs bound to it."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from stepgraph.twin.pytest_plugin import k8s, pytest_configure, twin  # noqa: F401 - fixtures

EXTERNAL = Path(__file__).resolve().parents[3].parent / "shared" / "reference" / "external"


@pytest.fixture
def core(k8s):
    return client.CoreV1Api(k8s)


@pytest.fixture
def apps(k8s):
    return client.AppsV1Api(k8s)


@pytest.fixture
def custom(k8s):
    return client.CustomObjectsApi(k8s)


@pytest.fixture
def ext(k8s):
    return client.ApiextensionsV1Api(k8s)


@pytest.fixture
def make_pod():
    """Build a small pod manifest: `make_pod("p", gpus=2, env={...})`."""
    return pod_body


def pod_body(name: str, *, labels=None, annotations=None, gpus: int = 0, env=None, command=None,
             node_selector=None, tolerations=None, restart="Never", containers=None) -> dict:
    """A small pod manifest (dict) for tests."""
    container = {"name": "main", "image": "busybox:1.36", "command": command or ["sleep", "infinity"]}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    spec = {"containers": containers or [container], "restartPolicy": restart}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    md = {"name": name, "labels": labels or {}, "annotations": annotations or {}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}
