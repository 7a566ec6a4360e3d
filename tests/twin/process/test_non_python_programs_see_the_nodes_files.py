"""A program that is not Python (an exec'd `cat`, a shell) sees the node's files as a Python one
does: the twin's cgroup text for host PIDs, hostPath volumes at their mountPath, read-only
mounts, and writes elsewhere in its own layer — through the twin's LD_PRELOAD file view."""

from __future__ import annotations

import os
import random
import subprocess
import uuid
from pathlib import Path

import pytest
from view_rig import pod

from stepgraph.twin.host import Host

STATE_MOUNT = {"name": "state", "mountPath": "/var/lib/dynamo-power-agent"}
STATE_VOLUME = {"name": "state", "hostPath": {"path": "/var/lib/dynamo-power-agent-kaim", "type": "DirectoryOrCreate"}}
PROC_MOUNT = {"name": "proc", "mountPath": "/host/proc", "readOnly": True}
PROC_VOLUME = {"name": "proc", "hostPath": {"path": "/proc"}}


def sh(view, script: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("STEPGRAPH_") and k != "LD_PRELOAD"}
    return subprocess.run(["sh", "-c", script], env=view.environ(base), capture_output=True, text=True, timeout=60,
                          check=False)


@pytest.mark.parametrize("driver", ["systemd", "cgroupfs"])
def test_cat_of_a_twin_pids_cgroup_is_the_twins_text(rig, driver):
    rig.host = Host(random.Random(1), cgroup_driver=driver)
    proc = rig.host.spawn("0d6c5f0e-52a4-4a5c-9d69-1f9d0a3b7c11", ["python", "w"])
    view = rig.open(pod(volumes=[PROC_VOLUME], mounts=[PROC_MOUNT]))
    for path in (f"/proc/{proc.pid}/cgroup", f"/host/proc/{proc.pid}/cgroup"):
        result = sh(view, f"cat {path}")
        assert (result.returncode, result.stdout) == (0, rig.host.cgroup(proc.pid)), result.stderr
    # grep reads through fopen/openat, test -f through stat: one view for every entry point
    result = sh(view, f"test -f /proc/{proc.pid}/cgroup && grep -c kubepods /proc/{proc.pid}/cgroup")
    lines = [line for line in rig.host.cgroup(proc.pid).splitlines() if "kubepods" in line]
    assert lines and result.stdout.strip() == str(len(lines)), result.stderr


def test_without_host_pid_another_pods_pid_does_not_exist_for_cat(rig):
    other = rig.host.spawn("0d6c5f0e-52a4-4a5c-9d69-1f9d0a3b7c11", ["python", "w"])
    result = sh(rig.open(pod(host_pid=False)), f"cat /proc/{other.pid}/cgroup")
    assert result.returncode == 1 and "No such file or directory" in result.stderr


def test_the_programs_own_proc_entries_stay_the_machines(rig):
    result = sh(rig.open(), "head -c 5 /proc/self/status; cat /proc/$$/cgroup")
    assert result.stdout.startswith("Name:") and result.stdout[5:] == Path(f"/proc/{os.getpid()}/cgroup").read_text()


def test_a_shell_reads_and_writes_the_hostpath_volume_and_a_read_only_mount_refuses(rig):
    view = rig.open(pod(volumes=[STATE_VOLUME], mounts=[STATE_MOUNT]))
    result = sh(view, "echo on > /var/lib/dynamo-power-agent/mark && cat /var/lib/dynamo-power-agent/mark")
    assert result.stdout == "on\n", result.stderr
    assert rig.devices.files.read("/var/lib/dynamo-power-agent-kaim/mark") == "on\n"
    assert not os.path.exists("/var/lib/dynamo-power-agent/mark")
    read_only = rig.open(pod(volumes=[STATE_VOLUME], mounts=[{**STATE_MOUNT, "readOnly": True}]))
    refused = sh(read_only, "cat /var/lib/dynamo-power-agent/mark && echo x > /var/lib/dynamo-power-agent/mark")
    assert refused.stdout == "on\n" and "Read-only file system" in refused.stderr


def test_writes_outside_the_mounts_stay_in_the_containers_layer(rig):
    name = f"/etc/stepgraph-layer-{uuid.uuid4().hex}"
    view = rig.open()
    with open("/etc/hostname") as f:
        machine = f.read()
    result = sh(view, f"echo mine > {name} && cat {name} && echo more >> /etc/hostname && cat /etc/hostname")
    assert result.stdout == f"mine\n{machine}more\n", result.stderr  # changed in place: copied up first
    assert not os.path.exists(name)
    with open("/etc/hostname") as f:
        assert f.read() == machine
    assert sh(rig.open(), f"cat {name}").returncode == 1  # another container's layer is not this one's
