"""configMap, secret and projected volumes are files at their mountPath in a process container, as
the kubelet writes them: every key or the listed items, their modes, read-only; a missing object
refuses the start with the kubelet's message unless the volume is optional."""

from __future__ import annotations

import base64
import os
import re
import subprocess

import pytest
from view_rig import pod

from stepgraph.twin.process.view import ViewError

NS = "dynamo-system"


def namespace(rig) -> None:
    try:
        rig.store.create("namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    except Exception:  # the store's 409: made by an earlier object of the test
        pass


def config_map(rig, name: str, data: dict) -> None:
    namespace(rig)
    rig.store.create("configmaps", NS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})


def secret(rig, name: str, data: dict) -> None:
    namespace(rig)
    rig.store.create("secrets", NS, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                                    "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}})


def mounted(volume: dict, path: str = "/etc/agent") -> dict:
    return pod(volumes=[{"name": "v", **volume}], mounts=[{"name": "v", "mountPath": path}])


def sh(view, script: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("STEPGRAPH_") and k != "LD_PRELOAD"}
    return subprocess.run(["sh", "-c", script], env=view.environ(base), capture_output=True, text=True, timeout=60,
                          check=False)


def test_a_config_map_volume_holds_every_key_read_only(rig):
    config_map(rig, "agent-cfg", {"safe_default_watts": "300", "mode": "nvml"})
    view = rig.open(mounted({"configMap": {"name": "agent-cfg"}}))
    result = rig.run(view, "import os; print(sorted(os.listdir('/etc/agent')), open('/etc/agent/safe_default_watts').read())")
    assert result.stdout.split("\n")[0] == "['mode', 'safe_default_watts'] 300", result.stderr
    refused = sh(view, "cat /etc/agent/mode && echo x > /etc/agent/mode")  # a program that is not Python too
    assert refused.stdout == "nvml" and "Read-only file system" in refused.stderr


def test_items_choose_keys_paths_and_modes(rig):
    config_map(rig, "agent-cfg", {"a": "1", "b": "2"})
    view = rig.open(mounted({"configMap": {"name": "agent-cfg", "defaultMode": 0o600,
                                           "items": [{"key": "b", "path": "sub/b.txt", "mode": 0o400}]}}))
    result = sh(view, "ls /etc/agent; cat /etc/agent/sub/b.txt; echo; stat -c %a /etc/agent/sub/b.txt")
    assert result.stdout.split() == ["sub", "2", "400"], result.stderr


def test_a_secret_volume_is_decoded_and_a_projected_volume_merges_its_sources(rig):
    secret(rig, "agent-token", {"token": "s3cret"})
    config_map(rig, "agent-cfg", {"mode": "dcgm"})
    view = rig.open(mounted({"secret": {"secretName": "agent-token"}}, "/var/run/agent"))
    assert sh(view, "cat /var/run/agent/token").stdout == "s3cret"
    projected = rig.open(mounted({"projected": {"sources": [{"secret": {"name": "agent-token"}},
                                                            {"configMap": {"name": "agent-cfg"}},
                                                            {"downwardAPI": {"items": []}}]}}))
    assert sh(projected, "cat /etc/agent/token /etc/agent/mode").stdout == "s3cretdcgm"
    assert projected.notes == ["volume 'v': a downwardAPI source is not projected in process containers — "
                               "only configMap and secret sources are"]


def test_a_missing_object_refuses_the_start_unless_optional(rig):
    with pytest.raises(ViewError, match=re.escape('MountVolume.SetUp failed for volume "v" : configmap "absent" not found')):
        rig.open(mounted({"configMap": {"name": "absent"}}))
    view = rig.open(mounted({"configMap": {"name": "absent", "optional": True}}))
    assert sh(view, "ls -A /etc/agent").stdout == ""
    config_map(rig, "agent-cfg", {"a": "1"})
    with pytest.raises(ViewError, match="references non-existent config key: nope"):
        rig.open(mounted({"configMap": {"name": "agent-cfg", "items": [{"key": "nope", "path": "x"}]}}))
