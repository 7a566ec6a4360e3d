"""Pods on the node + GPU compute PIDs → one cap per GPU, every tick (contract §3.2–§3.6).

`PowerAgent` is the reference implementation the twin runs inside the agent DaemonSet pod. It is
clock-free: the workload (`workload.py`) calls `start()` once, `reconcile_once()` every 15 s and
`handle_sigterm()` on graceful stop. Everything it touches comes in through the constructor, so
the same object is driven directly by the tests (B1–B8, C2, C3, D1, D3).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..faults import Faults
from .actuators import DcgmActuator, NvmlActuator
from .metrics import AgentMetrics
from .policy import Decision, in_scope, resolve
from .state import ManagedState

RECONCILE_INTERVAL_S = 15
_SYSTEMD = re.compile(r"kubepods-(?:burstable-|besteffort-)?pod([0-9a-f_]+)\.slice")
_CGROUPFS = re.compile(r"/kubepods(?:/burstable|/besteffort)?/pod([0-9a-f-]+)(?:/|$)", re.MULTILINE)


class PodListError(Exception):
    """The pod LIST failed (e.g. 403 Forbidden): the whole cycle is skipped."""


def pod_uid_from_cgroup(text: str) -> str | None:
    """Pod UID from `/proc/<pid>/cgroup` (systemd or cgroupfs driver); None for non-K8s PIDs."""
    if m := _SYSTEMD.search(text):
        return m.group(1).replace("_", "-")
    if m := _CGROUPFS.search(text):
        return m.group(1)
    return None


@dataclass
class AgentConfig:
    safe_default_watts: int
    node_name: str
    namespace: str | None = None
    generation: str = "PA-9790"
    actuator: str = "nvml"


class PowerAgent:
    def __init__(
        self,
        config: AgentConfig,
        actuator: NvmlActuator | DcgmActuator,
        metrics: AgentMetrics,
        state: ManagedState,
        list_pods: Callable[[], list[dict]],
        read_cgroup: Callable[[int], str],
        log: Callable[[str, str], None],
        faults: Faults | None = None,
    ) -> None:
        self.config = config
        self.actuator = actuator
        self.metrics = metrics
        self.state = state
        self._list_pods = list_pods
        self._read_cgroup = read_cgroup
        self.log = log
        self.faults = faults or Faults()
        self.ticks = 0
        self.writes: list[tuple[int, int]] = []  # (gpu index, effective W) of the last tick

    # --- start-up ----------------------------------------------------------------------------
    def start(self) -> None:
        """Orphan recovery: restore GPUs a previous agent capped that now run nothing."""
        for warning in self.state.warnings:
            self.log("WARNING", warning)
        restored = 0
        for i in range(0 if self.faults.agent_skips_orphan_recovery else self.actuator.device_count()):
            uuid = self.actuator.uuid(i)
            if uuid not in self.state.uuids or self.actuator.list_running_pids(i):
                continue
            if self.actuator.current_w(i) < self.actuator.default_w(i) and self.actuator.restore_default(i):
                self.state.drop(i, uuid)
                restored += 1
        self.state.persist()
        self.log("INFO", f"startup: {len(self.state.uuids)} previously managed GPU(s), {restored} orphan(s) restored")

    # --- the tick ----------------------------------------------------------------------------
    def reconcile_once(self) -> None:
        self.ticks += 1
        self.writes = []
        try:
            pods = self._list_pods()
        except PodListError as exc:
            self.metrics.inc("k8s_list_failures_total")
            self.log("ERROR", f"pod list failed, skipping this cycle: {exc}")
            return
        scope = self._build_uid_to_annotation(pods)
        for i in range(self.actuator.device_count()):
            try:
                self._reconcile_gpu(i, scope)
            except Exception as exc:
                self.log("ERROR", f"GPU {i}: reconcile failed: {exc!r}")

    def _build_uid_to_annotation(self, pods: list[dict]) -> dict[str, str | None]:
        scope: dict[str, str | None] = {}
        for pod in pods:
            meta = pod.get("metadata") or {}
            included, raw = in_scope(meta.get("annotations"), self.config.generation)
            if included:
                scope[meta["uid"]] = raw
        return scope

    def _pod_uids_on(self, i: int) -> tuple[list[int], list[str]]:
        pids = self.actuator.list_running_pids(i)
        uids: list[str] = []
        for pid in pids:
            try:
                uid = pod_uid_from_cgroup(self._read_cgroup(pid))
            except (ProcessLookupError, OSError):
                continue  # the process ended between the NVML read and ours
            if uid is not None and (uid not in uids or self.faults.agent_counts_processes):
                uids.append(uid)  # UID dedup: TP-rank helper PIDs are one pod (B3)
        return pids, uids

    def _reconcile_gpu(self, i: int, scope: dict[str, str | None]) -> None:
        pids, uids = self._pod_uids_on(i)
        if not pids:
            return  # idle GPU: no write, no restore — caps persist while idle
        entries = [(uid, scope[uid]) for uid in uids if uid in scope]
        if not entries:
            if self.config.generation == "PA-late":
                self._release_if_managed(i)
            return
        decision = self._decide(i, entries)
        target = (i + 1) % self.actuator.device_count() if self.faults.agent_writes_wrong_gpu else i
        self.writes.append((target, self.actuator.apply_cap(target, decision.watts)))
        if self.faults.agent_writes_twice:
            self.actuator.apply_cap(target, decision.watts)

    def _decide(self, i: int, entries: list[tuple[str, str | None]]) -> Decision:
        if self.faults.agent_ignores_conflicts and len(entries) > 1:
            first = resolve(entries[:1], self.config.safe_default_watts, self.config.generation)
            return Decision(first.watts)
        decision = resolve(entries, self.config.safe_default_watts, self.config.generation)
        if decision.reason:
            self.log(decision.level, f"GPU {i}: {decision.reason} -> {decision.watts} W")
        for name, labels in decision.counters:
            self.metrics.inc(name, labels)
        return decision

    def _release_if_managed(self, i: int) -> None:
        """PA-late: a GPU we capped now runs only out-of-scope work → back to factory default."""
        uuid = self.actuator.uuid(i)
        if i not in self.state.indices and uuid not in self.state.uuids:
            return
        if self.actuator.restore_default(i):
            self.state.drop(i, uuid)
            self.state.persist()
            self.log("INFO", f"GPU {i}: tenant changed to unannotated work; released to default")

    # --- shutdown ----------------------------------------------------------------------------
    def handle_sigterm(self) -> list[int]:
        """Restore every managed GPU to its default; returns the indices restored."""
        restored: list[int] = []
        managed = sorted(self.state.indices)
        if self.faults.agent_never_restores:
            managed = []
        if self.config.actuator == "dcgm" and self.faults.dcgm_uninstall_leaves_caps:
            managed = []  # Finding #10: the restore loop sees an empty (second) copy of the set
        for i in managed:
            if self.actuator.restore_default(i):
                self.state.drop(i, self.actuator.uuid(i))
                restored.append(i)
        self.state.persist()
        self.actuator.shutdown()
        self.log("INFO", f"SIGTERM: restored {len(restored)} GPU(s) to default")
        return restored
