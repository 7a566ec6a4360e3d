"""kubectl tables with the real columns for every served kind, `--sort-by` on any field (the
server includes the objects kubectl sorts by), and `get -w` keeping its columns (watch events
arrive as Tables)."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request

import pytest

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


def kubectl(twin, *args) -> subprocess.CompletedProcess:
    return subprocess.run(["kubectl", "--kubeconfig", str(twin.kubeconfig_path), *args], check=False,
                          capture_output=True, text=True, timeout=60)


def deployment(name: str, replicas: int) -> dict:
    return {"metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "m", "image": "op:1"}]}}}}


def test_deployments_services_replicasets_and_configmaps_print_their_real_columns(twin, apps, core):
    apps.create_namespaced_deployment("default", deployment("web", 2))
    core.create_namespaced_service("default", {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"k": "v"}})
    twin.clock.sleep(3)
    header, row = kubectl(twin, "get", "deployments").stdout.splitlines()
    assert header.split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"] and row.split()[:4] == ["web", "2/2", "2", "2"]
    header = kubectl(twin, "get", "services").stdout.splitlines()[0]
    assert header.split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert kubectl(twin, "get", "replicasets").stdout.split()[:5] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert kubectl(twin, "get", "configmaps", "-A").stdout.split()[:4] == ["NAMESPACE", "NAME", "DATA", "AGE"]


def test_sort_by_a_spec_field_sorts(twin, apps):
    apps.create_namespaced_deployment("default", deployment("three", 3))
    apps.create_namespaced_deployment("default", deployment("one", 1))
    out = kubectl(twin, "get", "deployments", "--sort-by=.spec.replicas")
    assert [line.split()[0] for line in out.stdout.splitlines()[1:]] == ["one", "three"], out.stderr


def test_a_watch_asked_for_tables_streams_table_rows(twin, core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}, "data": {"k": "v"}})
    req = urllib.request.Request(f"{twin.base_url}/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1",
                                 headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        events = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    tables = [e["object"] for e in events if e["object"].get("kind") == "Table"]
    assert tables and [c["name"] for c in tables[0]["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert [t["rows"][0]["cells"][:2] for t in tables if t["rows"][0]["cells"][0] == "a"] == [["a", 1]]
