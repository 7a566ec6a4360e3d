"""Fixtures for the API-server tests: a started twin and official-client APIs bound to it."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client
from reference_data import LIVE_MANIFESTS, LIVE_MANIFESTS_ABSENT

from stepgraph.twin import pytest_plugin

# The plugin's fixtures and marker, without registering it as a global pytest plugin.
twin = pytest_plugin.twin
k8s = pytest_plugin.k8s
pytest_configure = pytest_plugin.pytest_configure

@pytest.fixture
def live_manifests() -> Path:
    """The live test's manifests folder; the test is skipped when the reference copy is absent."""
    if not LIVE_MANIFESTS.is_dir():
        pytest.skip(LIVE_MANIFESTS_ABSENT)
    return LIVE_MANIFESTS


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
