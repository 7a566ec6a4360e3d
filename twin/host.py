"""Node host process table → PIDs, their `/proc/<pid>/cgroup` text, and the GPUs they hold.

The Power Agent attributes a GPU to a pod only through host PIDs: NVML lists the compute PIDs on a
GPU, the agent reads `/proc/<pid>/cgroup` and pulls the pod UID out of the kubepods path (contract
§3.2).  So this table is the whole of that seam: the kubelet spawns processes for pods, NVML asks
`pids_on_gpu(uuid)`, the agent asks `cgroup(pid)`.

Cgroup text follows the two kubelet drivers exactly as the agent's regexes expect:
- systemd (cgroup v2): `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid
  with underscores>.slice/cri-containerd-<id>.scope`; Guaranteed pods sit directly under
  `kubepods.slice` as `kubepods-pod<uid_>.slice`.
- cgroupfs (cgroup v1): one line per controller, `N:<controller>:/kubepods/burstable/pod<uid>/<id>`;
  Guaranteed pods as `/kubepods/pod<uid>/<id>`.
Processes that are not in a pod (`spawn_system`) get a `system.slice` / `/user.slice` path.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

CGROUP_DRIVERS = ("systemd", "cgroupfs")
QOS_CLASSES = ("Guaranteed", "Burstable", "BestEffort")
_V1_CONTROLLERS = ("cpuset", "cpu,cpuacct", "memory", "devices", "pids")
_PID_MIN, _PID_MAX = 1000, 4_194_303  # above the boot-time PIDs, below kernel.pid_max


@dataclass
class HostProcess:
    """One host process; `gpus` are the GPU UUIDs it holds a CUDA compute context on."""

    pid: int
    cmdline: tuple[str, ...]
    pod_uid: str | None = None
    qos_class: str = "Burstable"
    container: str | None = None
    container_id: str = ""
    gpus: tuple[str, ...] = ()
    gpu_memory_bytes: int = 0
    alive: bool = True
    labels: dict[str, str] = field(default_factory=dict)


class Host:
    """The node's process table; every random choice (PIDs, container ids) comes from `rng`."""

    def __init__(self, rng: random.Random, cgroup_driver: str = "systemd") -> None:
        if cgroup_driver not in CGROUP_DRIVERS:
            raise ValueError(f"cgroup_driver must be one of {CGROUP_DRIVERS}, got {cgroup_driver!r}")
        self.cgroup_driver = cgroup_driver
        self._rng = rng
        self._procs: dict[int, HostProcess] = {}
        self._lock = threading.RLock()

    # -- life cycle ---------------------------------------------------------------------------
    def spawn(
        self,
        pod_uid: str,
        cmdline: Iterable[str],
        *,
        qos_class: str = "Burstable",
        container: str | None = None,
        gpus: Iterable[str] = (),
        gpu_memory_bytes: int = 0,
    ) -> HostProcess:
        """Start a process inside a pod's cgroup, optionally holding compute contexts on `gpus`."""
        if qos_class not in QOS_CLASSES:
            raise ValueError(f"qos_class must be one of {QOS_CLASSES}, got {qos_class!r}")
        with self._lock:
            proc = HostProcess(
                pid=self._new_pid(),
                cmdline=tuple(cmdline),
                pod_uid=pod_uid,
                qos_class=qos_class,
                container=container,
                container_id=f"{self._rng.getrandbits(256):064x}",
                gpus=tuple(gpus),
                gpu_memory_bytes=gpu_memory_bytes,
            )
            self._procs[proc.pid] = proc
            return proc

    def spawn_system(self, cmdline: Iterable[str], *, gpus: Iterable[str] = ()) -> HostProcess:
        """Start a process outside Kubernetes (the agent must skip its PIDs)."""
        with self._lock:
            proc = HostProcess(pid=self._new_pid(), cmdline=tuple(cmdline), gpus=tuple(gpus))
            self._procs[proc.pid] = proc
            return proc

    def kill(self, pid: int) -> None:
        """End a process; killing a dead or unknown PID is a no-op, as `kill -9` on a zombie."""
        with self._lock:
            proc = self._procs.pop(pid, None)
            if proc is not None:
                proc.alive = False

    def kill_pod(self, pod_uid: str) -> list[int]:
        """End every process of a pod; returns the PIDs that ended."""
        with self._lock:
            pids = [p.pid for p in self._procs.values() if p.pod_uid == pod_uid]
            for pid in pids:
                self.kill(pid)
            return pids

    def _new_pid(self) -> int:
        while (pid := self._rng.randint(_PID_MIN, _PID_MAX)) in self._procs:
            pass
        return pid

    # -- queries ------------------------------------------------------------------------------
    def process(self, pid: int) -> HostProcess:
        """The live process with this PID; ProcessLookupError if there is none."""
        with self._lock:
            try:
                return self._procs[pid]
            except KeyError:
                raise ProcessLookupError(f"no such process: {pid}") from None

    def processes(self) -> list[HostProcess]:
        with self._lock:
            return sorted(self._procs.values(), key=lambda p: p.pid)

    def pids_of_pod(self, pod_uid: str) -> list[int]:
        with self._lock:
            return sorted(p.pid for p in self._procs.values() if p.pod_uid == pod_uid)

    def pids_on_gpu(self, uuid: str) -> list[int]:
        """PIDs holding a compute context on the GPU, in spawn-independent (PID) order."""
        with self._lock:
            return sorted(p.pid for p in self._procs.values() if uuid in p.gpus)

    def cgroup(self, pid: int) -> str:
        """The text of `/proc/<pid>/cgroup`; ProcessLookupError once the process is gone."""
        return cgroup_text(self.process(pid), self.cgroup_driver)


def cgroup_text(proc: HostProcess, driver: str) -> str:
    """Render `/proc/<pid>/cgroup` for one process under the given cgroup driver."""
    cid = proc.container_id or "0" * 64
    if proc.pod_uid is None:
        if driver == "systemd":
            return f"0::/system.slice/proc-{proc.pid}.scope\n"
        return "".join(f"{n}:{c}:/user.slice\n" for n, c in _numbered_controllers())
    qos = proc.qos_class.lower()
    if driver == "systemd":
        uid = proc.pod_uid.replace("-", "_")
        if proc.qos_class == "Guaranteed":
            path = f"/kubepods.slice/kubepods-pod{uid}.slice"
        else:
            path = f"/kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{uid}.slice"
        return f"0::{path}/cri-containerd-{cid}.scope\n"
    middle = "" if proc.qos_class == "Guaranteed" else f"/{qos}"
    path = f"/kubepods{middle}/pod{proc.pod_uid}/{cid}"
    return "".join(f"{n}:{c}:{path}\n" for n, c in _numbered_controllers())


def _numbered_controllers() -> list[tuple[int, str]]:
    return [(len(_V1_CONTROLLERS) - i, c) for i, c in enumerate(_V1_CONTROLLERS)]


def qos_class_of(pod: dict) -> str:
    """The pod's QoS class from its containers' requests and limits (Kubernetes' rule)."""
    containers = (pod.get("spec") or {}).get("containers") or []
    any_set = False
    guaranteed = bool(containers)
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        any_set = any_set or bool(req) or bool(lim)
        for name in ("cpu", "memory"):
            if name not in lim or str(req.get(name, lim[name])) != str(lim[name]):
                guaranteed = False
    if guaranteed:
        return "Guaranteed"
    return "Burstable" if any_set else "BestEffort"
