"""A small power agent of our own, written only against what the real agents expect of a node
(real pynvml, /proc/<pid>/cgroup, a state file under a hostPath, a 15 s tick on Event.wait,
SIGTERM restore), runs unmodified in a process container: it caps GPUs by pod, ticks on the
twin's clock, survives a crash through its persisted state (orphan recovery), and restores on
SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from itertools import pairwise

from view_rig import pod

from stepgraph.twin.process.view import Mount

AGENT = r'''
import json, os, re, signal, sys, threading, time
import pynvml

CAPS = json.loads(sys.argv[1])  # pod UID → watts
STATE_DIR = "/var/lib/dynamo-power-agent"
STATE = STATE_DIR + "/managed_gpus.json"
SYSTEMD = re.compile(r"kubepods-(?:burstable-|besteffort-)?pod([a-fA-F0-9_]+)\.slice")
CGROUPFS = re.compile(r"/kubepods(?:/burstable|/besteffort)?/pod([a-fA-F0-9-]+)(?:/|$)")
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())

def load():
    try:
        with open(STATE) as f:
            return set(json.load(f)["managed_uuids"])
    except FileNotFoundError:
        return set()

def persist(uuids):
    os.makedirs(STATE_DIR, exist_ok=True)
    with open(STATE + ".tmp", "w") as f:
        json.dump({"managed_uuids": sorted(uuids)}, f)
    os.replace(STATE + ".tmp", STATE)

def pod_uids(pid):
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            for line in f:
                m = SYSTEMD.search(line) or CGROUPFS.search(line)
                if m:
                    yield m.group(1).replace("_", "-")
    except FileNotFoundError:
        return

pynvml.nvmlInit()
managed = load()
gpus = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
for h in gpus:  # orphan recovery: ours, idle, below default
    uuid = pynvml.nvmlDeviceGetUUID(h)
    default = pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h)
    if uuid in managed and not pynvml.nvmlDeviceGetComputeRunningProcesses(h) \
            and pynvml.nvmlDeviceGetPowerManagementLimit(h) < default:
        pynvml.nvmlDeviceSetPowerManagementLimit(h, default)
        managed.discard(uuid)
        print(f"recovered {uuid}", flush=True)
persist(managed)
tick = 0
while not stop.is_set():
    for h in gpus:
        uids = {u for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h) for u in pod_uids(p.pid)}
        wanted = sorted(CAPS[u] for u in uids if u in CAPS)
        if wanted:
            pynvml.nvmlDeviceSetPowerManagementLimit(h, wanted[0] * 1000)
            managed.add(pynvml.nvmlDeviceGetUUID(h))
    persist(managed)
    print(f"tick {tick} {time.monotonic():.3f}", flush=True)
    tick += 1
    stop.wait(15)
for h in gpus:
    if pynvml.nvmlDeviceGetUUID(h) in managed:
        pynvml.nvmlDeviceSetPowerManagementLimit(h, pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h))
persist(set())
pynvml.nvmlShutdown()
print("restored", flush=True)
'''

STATE_VOLUME = {"name": "state", "hostPath": {"path": "/var/lib/dynamo-power-agent", "type": "DirectoryOrCreate"}}
STATE_MOUNT = {"name": "state", "mountPath": "/var/lib/dynamo-power-agent"}
NODE_STATE = "/var/lib/dynamo-power-agent/managed_gpus.json"


def _start(rig, folder, caps):
    view = rig.open(pod(volumes=[STATE_VOLUME], mounts=[STATE_MOUNT]), mounts=[Mount("/app", str(folder), True)])
    argv = view.argv(["python3", "/app/agent.py", json.dumps(caps)])
    base = {"PATH": "/usr/bin:/bin"}
    child = subprocess.Popen([sys.executable, *argv[1:]], env=view.environ(base), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    return view, child


def _lines_until(child, prefix):
    lines = []
    while not (lines and lines[-1].startswith(prefix)):
        line = child.stdout.readline()
        assert line, f"the agent ended early: {lines} {child.stderr.read()}"
        lines.append(line.strip())
    return lines


def test_caps_ticks_crash_recovery_and_sigterm_restore(rig, tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "agent.py").write_text(AGENT)
    a = rig.host.spawn("0d6c5f0e-52a4-4a5c-9d69-1f9d0a3b7c11", ["vllm"], gpus=[rig.board.gpus[0].uuid])
    b = rig.host.spawn("7f3e8d2a-1b4c-4e6f-8a9b-0c1d2e3f4a5b", ["vllm"], gpus=[rig.board.gpus[2].uuid],
                       qos_class="Guaranteed")
    caps = {a.pod_uid: 250, b.pod_uid: 300}

    view, child = _start(rig, tmp_path / "app", caps)
    try:
        started = time.monotonic()
        ticks = [float(line.split()[2]) for line in _lines_until(child, "tick 3")]
        wall = time.monotonic() - started
        assert rig.board.caps_w() == {0: 250, 1: 400, 2: 300, 3: 400}
        # a tick is the 15 s wait plus the reconcile's own work, which the scaled clock multiplies too
        assert all(15 <= later - earlier < 15 + rig.rate for earlier, later in pairwise(ticks)), ticks
        assert wall < 10  # three 15 s ticks on the scaled clock, not 45 s
        child.kill()  # a crash: no restore
        child.wait()
    finally:
        child.kill()
        view.close()
    assert rig.board.caps_w() == {0: 250, 1: 400, 2: 300, 3: 400}
    assert set(json.loads(rig.devices.files.read(NODE_STATE))["managed_uuids"]) == {
        rig.board.gpus[0].uuid, rig.board.gpus[2].uuid}

    rig.host.kill(a.pid)  # GPU 0's work is gone; GPU 2's pod still runs
    view, child = _start(rig, tmp_path / "app", caps)
    try:
        lines = _lines_until(child, "tick 0")
        assert lines[0] == f"recovered {rig.board.gpus[0].uuid}"
        assert rig.board.caps_w() == {0: 400, 1: 400, 2: 300, 3: 400}
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
        view.close()
    assert out.strip().endswith("restored"), err
    assert rig.board.caps_w() == {0: 400, 1: 400, 2: 400, 3: 400}
    assert json.loads(rig.devices.files.read(NODE_STATE)) == {"managed_uuids": []}
