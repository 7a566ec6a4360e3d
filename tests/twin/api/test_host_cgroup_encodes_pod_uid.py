"""Host PIDs: /proc/<pid>/cgroup encodes the pod UID as the Power Agent's regexes expect (§3.2)."""

from __future__ import annotations

import random
import re

import pytest
from stepgraph.twin.host import Host, qos_class_of

# The agent's two regexes (contract §3.2), used here as the oracle.
SYSTEMD = re.compile(r"kubepods-(burstable-|besteffort-)?pod([0-9a-f_]+)\.slice")
CGROUPFS = re.compile(r"/kubepods(/burstable|/besteffort)?/pod([0-9a-f-]+)(/|$)", re.MULTILINE)
UID = "1f0e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"


def uid_from(text: str) -> str | None:
    if m := SYSTEMD.search(text):
        return m.group(2).replace("_", "-")
    if m := CGROUPFS.search(text):
        return m.group(2)
    return None


@pytest.mark.parametrize("driver", ["systemd", "cgroupfs"])
@pytest.mark.parametrize("qos", ["Guaranteed", "Burstable", "BestEffort"])
def test_pod_uid_is_recoverable_from_cgroup_text(driver, qos):
    host = Host(random.Random(0), cgroup_driver=driver)
    proc = host.spawn(UID, ["python3"], qos_class=qos)
    assert uid_from(host.cgroup(proc.pid)) == UID


def test_systemd_text_uses_underscores_and_a_slice():
    host = Host(random.Random(0), cgroup_driver="systemd")
    text = host.cgroup(host.spawn(UID, ["x"], qos_class="Burstable").pid)
    assert f"kubepods-burstable-pod{UID.replace('-', '_')}.slice" in text
    assert UID not in text


def test_cgroupfs_text_has_a_line_per_controller():
    host = Host(random.Random(0), cgroup_driver="cgroupfs")
    text = host.cgroup(host.spawn(UID, ["x"], qos_class="BestEffort").pid)
    lines = text.splitlines()
    assert len(lines) > 1 and all(f"/kubepods/besteffort/pod{UID}/" in line for line in lines)


def test_non_kubernetes_process_has_no_pod_uid():
    host = Host(random.Random(0))
    assert uid_from(host.cgroup(host.spawn_system(["Xorg"]).pid)) is None


def test_pids_on_gpu_and_kill_pod():
    host = Host(random.Random(0))
    a = host.spawn(UID, ["w"], gpus=["GPU-a", "GPU-b"])
    b = host.spawn("other", ["w"], gpus=["GPU-b"])
    assert host.pids_on_gpu("GPU-a") == [a.pid]
    assert host.pids_on_gpu("GPU-b") == sorted([a.pid, b.pid])
    assert host.kill_pod(UID) == [a.pid]
    assert host.pids_on_gpu("GPU-b") == [b.pid]
    with pytest.raises(ProcessLookupError):
        host.cgroup(a.pid)


def test_same_seed_same_pids_different_seed_different_pids():
    def pids(seed):
        host = Host(random.Random(seed))
        return [host.spawn(UID, ["w"]).pid for _ in range(5)]
    assert pids(1) == pids(1)
    assert pids(1) != pids(2)


def test_unknown_driver_is_rejected():
    with pytest.raises(ValueError, match="cgroup_driver must be one of"):
        Host(random.Random(0), cgroup_driver="cgroupv3")


def test_qos_class_follows_kubernetes_rules():
    def pod(res):
        return {"spec": {"containers": [{"name": "c", "resources": res}]}}
    assert qos_class_of(pod({})) == "BestEffort"
    assert qos_class_of(pod({"requests": {"cpu": "1"}})) == "Burstable"
    assert qos_class_of(pod({"limits": {"cpu": "1", "memory": "1Gi"}})) == "Guaranteed"
    assert qos_class_of(pod({"requests": {"cpu": "1", "memory": "1Gi"},
                             "limits": {"cpu": "2", "memory": "1Gi"}})) == "Burstable"
