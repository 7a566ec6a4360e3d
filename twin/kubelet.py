"""Pods bound to the node → running containers: start-up on the clock, workloads, PIDs, exit, deletion.

Life of a pod here:
- bound → admitted: device-plugin GPUs claimed (if the scheduler has not), status filled in
  (IPs, QoS, `ContainerCreating`), start-up timer armed for `startup_delay` (+ image pull);
- timer fires → CUDA processes spawned per the convention (`cuda_contexts`), one workload per
  container started, phase Running with `Ready=True`;  a concrete UUID in
  `NVIDIA_VISIBLE_DEVICES` on a CDI-mode node instead fails container creation (Finding #7);
- a workload calls `ctx.exit(code)` → container terminated; restarted per `restartPolicy` (Always,
  or OnFailure after a failure) with the kubelet's back-off — the first restart at once, then
  10 s, 20 s, … up to 300 s, waiting in `CrashLoopBackOff` meanwhile, reset after 10 minutes
  without a crash; once no container will run again the pod is Succeeded or Failed;
- a workload whose `start` raises `StartFailure` waits with that reason (config errors, retried)
  or ends at once (`StartError`, exit 128) and is restarted as any exit;
- delete with grace → on the next clock step each running container's workload gets
  `stop(graceful=True)` (SIGTERM): it exits at once, after the seconds `stop` returns, or (for
  `math.inf`) when it calls `ctx.exit`; what still runs when the grace period ends gets
  `stop(graceful=False)` (SIGKILL, exit 137). Once no container runs, their final states are
  reported and the pod is removed (a delete with grace 0); PIDs end and GPUs are released.
"""

from __future__ import annotations

import functools
import logging
import math
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from .apiserver.errors import ApiError
from .apiserver.objects import timestamp
from .apiserver.streams import ExecOutput, ExecProcess, ExecRequest
from .cuda_contexts import DEFAULT_GPU_MEMORY, plan_contexts
from .host import qos_class_of
from .node import GPU_RESOURCE, Node, env_value, gpu_request
from .workloads import BufferedExec, ExecResult, StartFailure, Workload, WorkloadContext, WorkloadRegistry

log = logging.getLogger(__name__)
BACKOFF_INITIAL = 10.0    # the kubelet's container restart back-off: first delay,
BACKOFF_MAX = 300.0       # its cap (MaxContainerBackOff),
BACKOFF_RESET = 600.0     # and how long a container must not crash for the back-off to start over
CONFIG_RETRY = 10.0       # a container waiting on a config error is tried again this often
EXIT_SIGKILL = 137  # what a runtime reports for a container killed when its grace period ran out
KUBELET = "kubelet"


@dataclass
class Container:
    name: str
    workload: Workload | None = None
    ctx: WorkloadContext | None = None
    state: str = "waiting"          # waiting | running | terminated
    reason: str = "ContainerCreating"
    message: str = ""
    exit_code: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    restarts: int = 0
    container_id: str = ""
    ready: bool = False
    restart_timer: bool = False          # a restart is scheduled
    finished_clock: float = 0.0          # clock.now() at the last exit (the back-off's event time)
    last_terminated: dict | None = None  # status `lastState.terminated` of the previous instance


@dataclass
class PodRecord:
    uid: str
    namespace: str
    name: str
    containers: dict[str, Container] = field(default_factory=dict)
    logs: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    previous_logs: dict[str, list[tuple[float, str]]] = field(default_factory=dict)  # the instance before a restart
    timers: list[Any] = field(default_factory=list)
    terminating: bool = False
    followers: dict[str, list[Any]] = field(default_factory=dict)  # container → fn((wall, line) | None)
    held_status: dict | None = None  # while a sync starts containers: what it will report at its end


class Kubelet:
    """The node agent; also the API server's `PodRuntime` for log, exec and proxy."""

    def __init__(self, store: Any, node: Node, clock: Any, registry: WorkloadRegistry, rng: random.Random, *,
                 host_ip: str = "10.224.0.4", pod_ips: dict[str, str] | None = None) -> None:
        self.store, self.node, self.clock, self.registry = store, node, clock, registry
        self._rng = rng
        self.host_ip = host_ip
        self._pods: dict[str, PodRecord] = {}
        # pod uid → pod IP, unique while the pod lives; shared by the kubelets of one cluster
        self._ips: dict[str, str] = {} if pod_ips is None else pod_ips
        self._backoff: dict[tuple[str, str], tuple[float, float]] = {}  # (uid, container) → (delay, last restart)
        store.subscribe("pods", self._on_pod)

    # -- events ---------------------------------------------------------------------------
    def _on_pod(self, etype: str, pod: dict) -> None:
        md, spec = pod["metadata"], pod.get("spec") or {}
        if spec.get("nodeName") != self.node.name:
            return
        uid, rec = md["uid"], self._pods.get(md["uid"])
        if etype == "DELETED":
            self._cleanup(uid)
        elif rec is None and md.get("deletionTimestamp") is None:
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                self._admit(pod)
        elif rec is not None and md.get("deletionTimestamp") and not rec.terminating:
            self._notice_deletion(rec)
        elif rec is None and md.get("deletionTimestamp"):
            self._remove(md["namespace"], md["name"])

    def _admit(self, pod: dict) -> None:
        md = pod["metadata"]
        rec = PodRecord(md["uid"], md["namespace"], md["name"])
        self._pods[rec.uid] = rec
        for c in pod["spec"]["containers"]:
            rec.containers[c["name"]] = Container(c["name"])
            rec.logs[c["name"]] = []
        wanted = gpu_request(pod)
        if wanted and self.node.allocator.allocate(rec.uid, wanted) is None:
            free = len(self.node.allocator.free())
            self._patch_status(rec, {"phase": "Failed", "reason": "UnexpectedAdmissionError",
                                     "message": f"Allocate failed due to requested number of devices unavailable for "
                                                f"{GPU_RESOURCE}. Requested: {wanted}, Available: {free}, which is unexpected"})
            return
        self._patch_status(rec, {"hostIP": self.host_ip, "podIP": self._pod_ip(rec.uid),
                                 "startTime": timestamp(self.clock.wall()), "qosClass": qos_class_of(pod),
                                 **self._container_status(rec, pod)})
        delay = self.node.config.startup_delay + self.node.config.image_pull_delay
        rec.timers.append(self.clock.call_later(delay, lambda: self._start(rec.uid)))

    def _pod_ip(self, uid: str) -> str:
        taken = set(self._ips.values())
        while (ip := f"10.244.{self._rng.randint(0, 255)}.{self._rng.randint(2, 254)}") in taken:
            pass
        self._ips[uid] = ip
        return ip

    def _start(self, uid: str) -> None:
        rec = self._pods.get(uid)
        if rec is None or rec.terminating:
            return
        pod = self.store.get("pods", rec.namespace, rec.name)
        for c in pod["spec"]["containers"]:
            value = env_value(c, "NVIDIA_VISIBLE_DEVICES")
            if self.node.config.cdi_mode and value not in (None, "", "all", "none", "void"):
                self._cdi_reject(rec, pod, c["name"], value)
                return
        with self._one_status_update(rec, pod):
            for c in pod["spec"]["containers"]:
                self._run_container(rec, pod, c)
            for name in list(rec.containers):
                self._launch(rec, pod, name)

    @contextmanager
    def _one_status_update(self, rec: PodRecord, pod: dict) -> Iterator[None]:
        """A pod sync reports the status it ends with, as a real kubelet's does: the starts within
        it (a container marked running, then refused for its config) are never seen half-done."""
        rec.held_status = {}
        try:
            yield
        finally:
            held, rec.held_status = rec.held_status, None
            if "phase" not in held:  # no container ended the pod within the sync
                held = {"phase": self._phase(rec), **held, **self._container_status(rec, pod)}
            self._patch_status(rec, held)

    @staticmethod
    def _phase(rec: PodRecord) -> str:
        """The kubelet's getPhase for a pod not yet ended: Pending while a container waits that
        has never run (its config or creation refused); Running otherwise."""
        never_ran = any(c.state == "waiting" and not c.last_terminated for c in rec.containers.values())
        return "Pending" if never_ran else "Running"

    def _launch(self, rec: PodRecord, pod: dict, name: str) -> None:
        c = rec.containers[name]
        if c.workload is None or c.ctx is None or c.state != "running":
            return
        image = c.ctx.container.get("image", "")
        self.store.record_event(pod, "Pulled", f'Container image "{image}" already present on machine',
                                component=KUBELET)
        try:
            c.workload.start(c.ctx)
        except StartFailure as exc:
            if exc.exit_code is not None:  # created, then its start failed; a refused config creates nothing
                self.store.record_event(pod, "Created", f"Created container {c.name}", component=KUBELET)
            self._start_failed(rec, pod, name, exc)
            return
        self.store.record_event(pod, "Created", f"Created container {c.name}", component=KUBELET)
        self.store.record_event(pod, "Started", f"Started container {c.name}", component=KUBELET)

    def _start_failed(self, rec: PodRecord, pod: dict, name: str, exc: StartFailure) -> None:
        c = rec.containers[name]
        self.store.record_event(pod, "Failed", f"Error: {exc.message}", type="Warning", component=KUBELET)
        if exc.exit_code is not None:
            self._container_exit(rec.uid, name, exc.exit_code, reason=exc.reason, message=exc.message)
            return
        for proc in c.ctx.processes if c.ctx else ():
            self.node.host.kill(proc.pid)
        c.state, c.reason, c.message, c.workload = "waiting", exc.reason, exc.message, None
        self._patch_status(rec, self._container_status(rec, self.store.get("pods", rec.namespace, rec.name)))
        rec.timers.append(self.clock.call_later(CONFIG_RETRY, lambda: self._restart_container(rec.uid, name, False)))

    def _run_container(self, rec: PodRecord, pod: dict, spec: dict) -> None:
        c = rec.containers[spec["name"]]
        container = c.name
        visible = self.node.visible_gpus(pod, spec)
        procs = [self.node.host.spawn(rec.uid, plan.cmdline, qos_class=qos_class_of(pod), container=c.name,
                                      gpus=plan.gpus, gpu_memory_bytes=DEFAULT_GPU_MEMORY)
                 for plan in plan_contexts(pod, spec, visible)]
        c.ctx = WorkloadContext(pod=pod, container=spec, node=self.node, host=self.node.host, gpus=visible,
                                clock=self.clock, store=self.store, processes=procs,
                                log=lambda line: self._log(rec, container, str(line)),
                                exit=functools.partial(self._container_exit, rec.uid, container),
                                set_ready=functools.partial(self._set_ready, rec.uid, container))
        c.workload = self.registry.create(pod, spec)
        c.ready = c.workload.ready_on_start
        c.state, c.reason, c.message, c.started_at = "running", "", "", timestamp(self.clock.wall())
        c.container_id = f"containerd://{self._rng.getrandbits(256):064x}"

    def _log(self, rec: PodRecord, name: str, line: str) -> None:
        entry = (self.clock.wall(), line)
        rec.logs[name].append(entry)
        for fn in list(rec.followers.get(name, ())):
            fn(entry)

    def _end_followers(self, rec: PodRecord, name: str | None = None) -> None:
        for container in [name] if name else list(rec.followers):
            for fn in rec.followers.pop(container, []):
                fn(None)

    def _set_ready(self, uid: str, name: str, ready: bool) -> None:
        """A workload's readiness changed (what a readiness probe would report)."""
        rec = self._pods.get(uid)
        if rec is None or rec.containers[name].state != "running" or rec.containers[name].ready == bool(ready):
            return
        rec.containers[name].ready = bool(ready)
        self._patch_status(rec, self._container_status(rec, self.store.get("pods", rec.namespace, rec.name, copy=False)))

    def _cdi_reject(self, rec: PodRecord, pod: dict, name: str, value: str) -> None:
        message = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: could not "
                   "apply required modification to OCI specification: error modifying OCI spec: failed to inject CDI "
                   f"devices: unresolvable CDI devices management.nvidia.com/gpu={value}: unknown")
        c = rec.containers[name]
        c.reason, c.message = "CreateContainerError", message
        self._patch_status(rec, self._container_status(rec, pod))
        self.store.record_event(pod, "Failed", f"Error: {message}", type="Warning", component=KUBELET)

    def _container_exit(self, uid: str, name: str, code: int, reason: str | None = None, message: str = "") -> None:
        rec = self._pods.get(uid)
        if rec is None or rec.containers[name].state != "running":
            return
        c = rec.containers[name]
        c.state, c.exit_code, c.finished_at = "terminated", int(code), timestamp(self.clock.wall())
        c.finished_clock = self.clock.now()
        c.reason, c.message = reason or ("Completed" if code == 0 else "Error"), message
        for proc in c.ctx.processes if c.ctx else ():
            self.node.host.kill(proc.pid)
        self._end_followers(rec, name)
        if rec.terminating:
            self._finish_termination(rec)
            return
        pod = self.store.get("pods", rec.namespace, rec.name, copy=False)  # read only
        policy = pod["spec"].get("restartPolicy", "Always")
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            self._schedule_restart(rec, pod, c)
            return
        if any(x.state == "running" or x.restart_timer for x in rec.containers.values()):
            self._patch_status(rec, self._container_status(rec, pod))
            return
        failed = any(x.exit_code for x in rec.containers.values())
        self.node.allocator.release(uid)
        self._patch_status(rec, {"phase": "Failed" if failed else "Succeeded", **self._container_status(rec, pod)})

    def _schedule_restart(self, rec: PodRecord, pod: dict, c: Container) -> None:
        """Restart now, or wait in CrashLoopBackOff while the kubelet's back-off lasts."""
        delay = self._backoff_remaining((rec.uid, c.name), c.finished_clock)
        c.last_terminated = self._terminated_state(c)
        if delay > 0:
            backoff = self._backoff[(rec.uid, c.name)][0]
            md = pod["metadata"]
            c.state, c.reason = "waiting", "CrashLoopBackOff"
            c.message = f"back-off {backoff:g}s restarting failed container={c.name} pod={md['name']}_{md['namespace']}({md['uid']})"
            self.store.record_event(pod, "BackOff", f"Back-off restarting failed container {c.name} in pod "
                                    f"{md['name']}_{md['namespace']}({md['uid']})", type="Warning", component=KUBELET)
        self._patch_status(rec, self._container_status(rec, pod))
        c.restart_timer = True
        rec.timers.append(self.clock.call_later(delay, lambda: self._restart_container(rec.uid, c.name)))

    def _backoff_remaining(self, key: tuple[str, str], finished: float) -> float:
        """flowcontrol.Backoff.IsInBackOffSince: how long from now until a restart may happen."""
        entry = self._backoff.get(key)
        if entry is None or finished - entry[1] > BACKOFF_RESET:
            return 0.0
        return max(0.0, entry[0] - (self.clock.now() - finished))

    def _backoff_next(self, key: tuple[str, str], finished: float) -> None:
        """flowcontrol.Backoff.Next at a restart: 10 s after a first crash, doubled after each later one."""
        entry = self._backoff.get(key)
        delay = BACKOFF_INITIAL if entry is None or finished - entry[1] > BACKOFF_RESET else min(entry[0] * 2, BACKOFF_MAX)
        self._backoff[key] = (delay, self.clock.now())

    def _restart_container(self, uid: str, name: str, counts: bool = True) -> None:
        rec = self._pods.get(uid)
        if rec is None or rec.terminating or rec.containers[name].state == "running":
            return
        c = rec.containers[name]
        c.restart_timer = False
        if counts:
            self._backoff_next((uid, name), c.finished_clock)
            c.restarts += 1
            rec.previous_logs[name], rec.logs[name] = rec.logs[name], []
        c.state = "waiting"
        pod = self.store.get("pods", rec.namespace, rec.name)
        spec = next(x for x in pod["spec"]["containers"] if x["name"] == name)
        with self._one_status_update(rec, pod):
            self._run_container(rec, pod, spec)
            self._launch(rec, pod, name)

    # -- graceful termination ----------------------------------------------------------------
    def _notice_deletion(self, rec: PodRecord) -> None:
        """A deletionTimestamp appeared. A real kubelet acts on it in its next pod sync, after
        the DELETE has returned, so the pod is visible as Terminating (and its name taken) at
        least until the clock next moves, and for as long as its containers take to exit."""
        rec.terminating = True
        for t in rec.timers:
            t.cancel()
        rec.timers = [self.clock.call_later(0, lambda: self._stop_containers(rec.uid))]

    def _stop_containers(self, uid: str) -> None:
        """SIGTERM every running container; SIGKILL what still runs when the grace period ends."""
        rec = self._pods.get(uid)
        if rec is None:
            return
        try:
            pod = self.store.get("pods", rec.namespace, rec.name, copy=False)  # read only
        except ApiError:
            return
        grace = float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
        running = [c for c in rec.containers.values() if c.state == "running" and c.workload and c.ctx]
        for c in running:
            self.store.record_event(pod, "Killing", f"Stopping container {c.name}", component=KUBELET)
        for c in running:
            assert c.workload is not None and c.ctx is not None  # both checked above
            needs = c.workload.stop(c.ctx, True)
            if needs is None or needs <= 0:
                self._container_exit(uid, c.name, 0)
            elif needs < grace and needs != math.inf:
                rec.timers.append(self.clock.call_later(needs, lambda n=c.name: self._container_exit(uid, n, 0)))
        if any(c.state == "running" for c in rec.containers.values()):
            rec.timers.append(self.clock.call_later(grace, lambda: self._kill_remaining(uid)))
        self._finish_termination(rec)

    def _kill_remaining(self, uid: str) -> None:
        rec = self._pods.get(uid)
        if rec is None:
            return
        for c in list(rec.containers.values()):
            if c.state == "running":
                if c.workload is not None and c.ctx is not None:
                    c.workload.stop(c.ctx, False)
                self._container_exit(uid, c.name, EXIT_SIGKILL)

    def _finish_termination(self, rec: PodRecord) -> None:
        """Once no container runs: report their final states, then remove the pod (grace 0)."""
        if any(c.state == "running" for c in rec.containers.values()) or rec.uid not in self._pods:
            return
        for t in rec.timers:
            t.cancel()
        try:
            pod = self.store.get("pods", rec.namespace, rec.name, copy=False)  # read only
        except ApiError:
            return
        if any(c.state == "terminated" for c in rec.containers.values()):
            self._patch_status(rec, self._container_status(rec, pod))
        self._remove(rec.namespace, rec.name)

    def _remove(self, namespace: str, name: str) -> None:
        try:
            self.store.delete("pods", namespace, name, grace_period_seconds=0, copy=False)
        except ApiError as exc:
            if exc.code != 404:
                raise

    def _cleanup(self, uid: str) -> None:
        rec = self._pods.pop(uid, None)
        self._ips.pop(uid, None)
        for key in [k for k in self._backoff if k[0] == uid]:
            del self._backoff[key]
        if rec is not None:
            self._end_followers(rec)
            for t in rec.timers:
                t.cancel()
            for c in rec.containers.values():
                if c.workload is not None and c.ctx is not None and c.state == "running":
                    c.workload.stop(c.ctx, False)
        self.node.host.kill_pod(uid)
        self.node.allocator.release(uid)

    # -- status ---------------------------------------------------------------------------
    def _container_status(self, rec: PodRecord, pod: dict) -> dict:
        now = timestamp(self.clock.wall())
        statuses = []
        for spec in pod["spec"]["containers"]:
            c = rec.containers[spec["name"]]
            if c.state == "running":
                state = {"running": {"startedAt": c.started_at}}
            elif c.state == "terminated":
                state = self._terminated_state(c)
            else:
                state = {"waiting": {"reason": c.reason, **({"message": c.message} if c.message else {})}}
            last = {"lastState": c.last_terminated} if c.last_terminated else {}
            statuses.append({"name": c.name, "image": spec.get("image", ""), "imageID": "", "state": state, **last,
                             "ready": c.ready and c.state == "running", "restartCount": c.restarts,
                             "started": c.state == "running", **({"containerID": c.container_id} if c.container_id else {})})
        all_ready = all(s["ready"] for s in statuses)
        conds = [{"type": t, "status": s, "lastProbeTime": None, "lastTransitionTime": now}
                 for t, s in (("PodReadyToStartContainers", "True"), ("Initialized", "True"),
                              ("Ready", str(all_ready)), ("ContainersReady", str(all_ready)), ("PodScheduled", "True"))]
        return {"conditions": conds, "containerStatuses": statuses}

    @staticmethod
    def _terminated_state(c: Container) -> dict:
        return {"terminated": {"exitCode": c.exit_code, "reason": c.reason, "startedAt": c.started_at,
                               "finishedAt": c.finished_at, "containerID": c.container_id,
                               **({"message": c.message} if c.message else {})}}

    def _patch_status(self, rec: PodRecord, status: dict) -> None:
        if rec.held_status is not None:
            rec.held_status.update(status)
            return
        try:
            self.store.patch("pods", rec.namespace, rec.name, {"status": status}, subresource="status", copy=False)
        except ApiError as exc:
            if exc.code != 404:
                raise

    # -- PodRuntime (log / exec / proxy for the API server) ----------------------------------
    def _running(self, pod: dict, container: str) -> Container:
        rec = self._pods.get(pod["metadata"]["uid"])
        c = rec.containers.get(container) if rec else None
        if c is None or c.state != "running" or c.workload is None:
            raise ApiError(400, f'unable to upgrade connection: container not found ("{container}")', "BadRequest")
        return c

    def ensure_running(self, pod: dict, container: str) -> None:
        self._running(pod, container)

    def logs(self, pod: dict, container: str, previous: bool = False) -> list[tuple[float, str]]:
        rec = self._pods.get(pod["metadata"]["uid"])
        c = rec.containers.get(container) if rec else None
        if previous:
            if rec is None or c is None or container not in rec.previous_logs:
                raise ApiError(400, f'previous terminated container "{container}" in pod "{pod["metadata"]["name"]}" '
                                    "not found", "BadRequest")
            return list(rec.previous_logs[container])
        if rec is None or c is None or (c.state == "waiting" and not rec.logs.get(container)):
            reason = c.reason if c else "ContainerCreating"
            raise ApiError(400, f'container "{container}" in pod "{pod["metadata"]["name"]}" is waiting to start: '
                                f"{reason}", "BadRequest")
        return list(rec.logs[container])

    def follow_logs(self, pod: dict, container: str, fn: Any) -> Any:
        """Call `fn((wall, line))` for each new line and `fn(None)` when the container ends;
        returns a function that stops following."""
        rec = self._pods.get(pod["metadata"]["uid"])
        if rec is None or rec.containers[container].state != "running":
            fn(None)
            return lambda: None
        rec.followers.setdefault(container, []).append(fn)
        return lambda: rec.followers.get(container, []).remove(fn) if fn in rec.followers.get(container, []) else None

    def exec(self, pod: dict, container: str, argv: list[str], stdin: bytes | None) -> ExecResult:
        c = self._running(pod, container)
        assert c.workload is not None and c.ctx is not None  # a running container has both
        try:
            return c.workload.exec(c.ctx, argv, stdin)
        except Exception:  # a broken workload is an exec failure, not a server crash
            log.exception("workload exec %r failed", argv)
            return ExecResult(stderr=b"exec failed: internal error in twin workload\n", exit_code=1)

    def exec_stream(self, pod: dict, container: str, request: ExecRequest, output: ExecOutput) -> ExecProcess:
        c = self._running(pod, container)
        assert c.workload is not None and c.ctx is not None  # a running container has both
        try:
            return c.workload.exec_stream(c.ctx, request, output)
        except Exception:  # a broken workload is an exec failure, not a server crash
            log.exception("workload exec %r failed", list(request.argv))
            return BufferedExec(lambda stdin: ExecResult(stderr=b"exec failed: internal error in twin workload\n",
                                                         exit_code=1), replace(request, stdin=False), output)

    def proxy(self, pod: dict, port: int | None, path: str) -> tuple[int, str, bytes] | None:
        for spec in pod["spec"]["containers"]:
            ports = [p.get("containerPort") for p in spec.get("ports") or []]
            if port is None or port in ports or not ports:
                try:
                    c = self._running(pod, spec["name"])
                except ApiError:
                    continue
                assert c.workload is not None and c.ctx is not None  # a running container has both
                answer = c.workload.http_get(c.ctx, port or (ports[0] if ports else 80), path)
                if answer is not None:
                    return answer
        return None

    def forward_port(self, pod: dict, port: int) -> int | None:
        """A pod's containers share one network namespace: the first running one listening on
        `port` takes the connection."""
        rec = self._pods.get(pod["metadata"]["uid"])
        for c in (rec.containers.values() if rec else ()):
            if c.state == "running" and c.workload is not None and c.ctx is not None:
                machine_port = c.workload.listening_port(c.ctx, port)
                if machine_port is not None:
                    return machine_port
        return None
