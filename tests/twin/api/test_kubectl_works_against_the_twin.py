"""kubectl (when installed) against the twin: apply with server-side field validation, get, exec
(also with stdin)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


def kubectl(twin, *args, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["kubectl", "--kubeconfig", str(twin.kubeconfig_path), *args], check=False, input=stdin,
                          capture_output=True, text=True, timeout=60)


POD = """apiVersion: v1
kind: Pod
metadata: {name: k, namespace: default}
spec:
  containers: [{name: c, image: busybox:1.36}]
"""


def test_apply_get_and_exec(twin):
    applied = kubectl(twin, "apply", "-f", "-", stdin=POD)
    assert applied.returncode == 0 and "pod/k created" in applied.stdout, applied.stderr
    assert "pod/k unchanged" in kubectl(twin, "apply", "-f", "-", stdin=POD).stdout
    twin.clock.sleep(3)
    got = json.loads(kubectl(twin, "get", "pod", "k", "-o", "json").stdout)
    assert got["status"]["phase"] == "Running"
    out = kubectl(twin, "exec", "k", "--", "echo", "from-kubectl")
    assert out.returncode == 0 and out.stdout == "from-kubectl\n"
    missing = kubectl(twin, "exec", "k", "--", "nvidia-smi")
    assert missing.returncode != 0 and "executable file not found" in missing.stderr
    # stdin piped through `exec -i` (kubectl ≥ 1.30 streams it over v5 websockets and closes it)
    shell = kubectl(twin, "exec", "-i", "k", "--", "sh", stdin="echo one\nfalse\nexit 4\necho never\n")
    assert (shell.stdout, shell.returncode) == ("one\n", 4)
    assert "command terminated with exit code 4" in shell.stderr


def test_apply_rejects_unknown_fields_through_strict_server_validation(twin):
    bad = POD.replace("spec:", "bogus: 1\nspec:")
    result = kubectl(twin, "apply", "-f", "-", stdin=bad)
    assert result.returncode != 0 and 'unknown field "bogus"' in result.stderr


def test_get_prints_pod_columns_from_a_table(twin):
    kubectl(twin, "apply", "-f", "-", stdin=POD)
    twin.clock.sleep(3)
    out = kubectl(twin, "get", "pods").stdout.splitlines()
    assert out[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert out[1].split()[:4] == ["k", "1/1", "Running", "0"]
