"""Cap requests → driver writes, through NVML or a DCGM hostengine (contract §3.4).

Both actuators share the contract: `apply_cap(i, W)` clamps to the SKU constraints (ticking
`cap_clamped_total{direction}`), writes, records the GPU as managed and sets the applied gauge on
success, counts `apply_failures_total` on failure, never raises, and returns the effective watts.
`i` is the actuator's own index: NVML index for NVML, position in the sorted DCGM gpuIds for DCGM
(PIDs are still read through NVML, via the UUID identity map).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Protocol

from ..dcgm import (
    AGENT_GROUP_PREFIX,
    DCGM_FI_DEV_POWER_MGMT_LIMIT,
    DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF,
    DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX,
    DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN,
    DCGM_ST_CONNECTION_NOT_VALID,
    DcgmError,
)
from .metrics import AgentMetrics
from .state import ManagedState

Log = Callable[[str, str], None]  # (level, message)


class DcgmCalls(Protocol):
    """The hostengine calls the DCGM actuator makes: the twin's DcgmConnection in process, or the
    reference agent's connection through the DCGM Python bindings."""

    def get_all_gpu_ids(self) -> list[int]: ...
    def gpu_uuid(self, gpu_id: int, /) -> str: ...
    def latest_values(self, gpu_id: int, field_ids: list[int], /) -> dict[int, float]: ...
    def create_group(self, name: str, /) -> int: ...
    def add_gpu(self, group_id: int, gpu_id: int, /) -> None: ...
    def config_set_power_limit(self, group_id: int, watts: int, /) -> None: ...
    def config_enforce(self, group_id: int, /) -> None: ...
    def close(self) -> None: ...


class _Base:
    name = "base"
    # what each actuator reads its own way (declared for the shared clamp and record)
    constraints_w: Callable[[int], tuple[int, int] | None]
    uuid: Callable[[int], str]

    def __init__(self, nvml: types.ModuleType, metrics: AgentMetrics, state: ManagedState, log: Log) -> None:
        self.nvml = nvml
        self.metrics = metrics
        self.state = state
        self.log = log
        nvml.nvmlInit()

    def _clamp(self, i: int, watts: int) -> int:
        bounds = self.constraints_w(i)
        if bounds is None:  # constraints unreadable → no clamp, as the agent does
            return watts
        low, high = bounds
        if watts < low:
            self.log("WARNING", f"GPU {i}: requested {watts} W below minimum {low} W; clamping")
            self.metrics.inc("cap_clamped_total", (("direction", "min"),))
            return low
        if watts > high:
            self.log("WARNING", f"GPU {i}: requested {watts} W above maximum {high} W; clamping")
            self.metrics.inc("cap_clamped_total", (("direction", "max"),))
            return high
        return watts

    def _record(self, i: int, watts: int) -> None:
        self.state.add(i, self.uuid(i))
        self.metrics.set_applied(i, watts)

    def _nvml_handle(self, nvml_index: int):
        return self.nvml.nvmlDeviceGetHandleByIndex(nvml_index)

    def shutdown(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except self.nvml.NVMLError:
            pass


class NvmlActuator(_Base):
    name = "nvml"

    def device_count(self) -> int:
        return self.nvml.nvmlDeviceGetCount()

    def uuid(self, i: int) -> str:
        return self.nvml.nvmlDeviceGetUUID(self._nvml_handle(i))

    def list_running_pids(self, i: int) -> list[int]:
        return [p.pid for p in self.nvml.nvmlDeviceGetComputeRunningProcesses(self._nvml_handle(i))]

    def constraints_w(self, i: int) -> tuple[int, int] | None:
        try:
            low, high = self.nvml.nvmlDeviceGetPowerManagementLimitConstraints(self._nvml_handle(i))
        except self.nvml.NVMLError:
            return None
        return low // 1000, high // 1000

    def current_w(self, i: int) -> int:
        return self.nvml.nvmlDeviceGetPowerManagementLimit(self._nvml_handle(i)) // 1000

    def default_w(self, i: int) -> int:
        return self.nvml.nvmlDeviceGetPowerManagementDefaultLimit(self._nvml_handle(i)) // 1000

    def apply_cap(self, i: int, watts: int) -> int:
        effective = self._clamp(i, watts)
        try:
            self.nvml.nvmlDeviceSetPowerManagementLimit(self._nvml_handle(i), effective * 1000)
        except self.nvml.NVMLError as exc:
            self.log("ERROR", f"nvmlDeviceSetPowerManagementLimit GPU {i} -> {effective} W failed: {exc}")
            self.metrics.inc("apply_failures_total")
            return effective
        self._record(i, effective)
        return effective

    def restore_default(self, i: int) -> bool:
        try:
            handle = self._nvml_handle(i)
            self.nvml.nvmlDeviceSetPowerManagementLimit(
                handle, self.nvml.nvmlDeviceGetPowerManagementDefaultLimit(handle)
            )
        except self.nvml.NVMLError as exc:
            self.log("ERROR", f"restore GPU {i} to default failed: {exc}")
            return False
        return True


class DcgmActuator(_Base):
    """DCGM writes (Set, optional Enforce) with one reconnect on DCGM_ST_CONNECTION_NOT_VALID."""

    name = "dcgm"

    def __init__(self, connect: Callable[[], DcgmCalls], enforce: bool, *args,
                 reconnect_disabled: Callable[[], bool] = lambda: False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._connect = connect
        self._reconnect_disabled = reconnect_disabled  # the `agent_never_reconnects` bug
        self.enforce = enforce
        self.conn = connect()  # fails loudly if the hostengine is unreachable: no NVML fallback
        self.gpu_ids = sorted(self.conn.get_all_gpu_ids())
        self._groups: dict[int, int] = {}
        self._dcgm_uuid_by_idx: list[str] = []
        self._nvml_index_by_uuid: dict[str, int] = {}

    def _ensure_identity_map(self) -> None:
        if not self._dcgm_uuid_by_idx:
            self._with_reconnect(self._build_identity_map)  # a hostengine restart lands here first (E3)

    def _build_identity_map(self) -> None:
        dcgm_uuids = [self.conn.gpu_uuid(g) for g in self.gpu_ids]
        nvml_map = {
            self.nvml.nvmlDeviceGetUUID(self._nvml_handle(n)): n for n in range(self.nvml.nvmlDeviceGetCount())
        }
        missing = [u for u in dcgm_uuids if u not in nvml_map]
        if missing:
            raise RuntimeError(f"DCGM GPUs invisible to NVML: {missing}")
        self._dcgm_uuid_by_idx, self._nvml_index_by_uuid = dcgm_uuids, nvml_map

    def _with_reconnect(self, fn: Callable[[], object]) -> object:
        try:
            return fn()
        except DcgmError as exc:
            if exc.value != DCGM_ST_CONNECTION_NOT_VALID or self._reconnect_disabled():
                raise
            self.log("WARNING", "DCGM connection lost; reconnecting and retrying once")
            self._groups.clear()
            self._dcgm_uuid_by_idx, self._nvml_index_by_uuid = [], {}
            self.conn.close()
            self.conn = self._connect()
            self.gpu_ids = sorted(self.conn.get_all_gpu_ids())
            return fn()

    def device_count(self) -> int:
        return len(self.gpu_ids)

    def uuid(self, i: int) -> str:
        self._ensure_identity_map()
        return self._dcgm_uuid_by_idx[i]

    def nvml_index(self, i: int) -> int:
        self._ensure_identity_map()
        return self._nvml_index_by_uuid[self._dcgm_uuid_by_idx[i]]

    def list_running_pids(self, i: int) -> list[int]:
        handle = self._nvml_handle(self.nvml_index(i))
        return [p.pid for p in self.nvml.nvmlDeviceGetComputeRunningProcesses(handle)]

    def _fields(self, i: int, *field_ids: int) -> dict[int, float]:
        return self._with_reconnect(lambda: self.conn.latest_values(self.gpu_ids[i], list(field_ids)))  # type: ignore[return-value]

    def constraints_w(self, i: int) -> tuple[int, int] | None:
        try:
            values = self._fields(i, DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN, DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX)
        except DcgmError:
            return None
        return int(values[DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN]), int(values[DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX])

    def current_w(self, i: int) -> int:
        return int(self._fields(i, DCGM_FI_DEV_POWER_MGMT_LIMIT)[DCGM_FI_DEV_POWER_MGMT_LIMIT])

    def default_w(self, i: int) -> int:
        return int(self._fields(i, DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF)[DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF])

    def _group(self, i: int) -> int:
        if i not in self._groups:
            gid = self.conn.create_group(f"{AGENT_GROUP_PREFIX}{i}")
            self.conn.add_gpu(gid, self.gpu_ids[i])
            self._groups[i] = gid
        return self._groups[i]

    def _set(self, i: int, watts: int) -> None:
        self._with_reconnect(lambda: self.conn.config_set_power_limit(self._group(i), watts))

    def apply_cap(self, i: int, watts: int) -> int:
        effective = self._clamp(i, watts)
        try:
            self._set(i, effective)
        except DcgmError as exc:
            self.log("ERROR", f"dcgmConfigSet GPU {i} -> {effective} W failed: {exc}")
            self.metrics.inc("apply_failures_total")
            return effective
        self._record(i, effective)
        if self.enforce:
            try:
                self._with_reconnect(lambda: self.conn.config_enforce(self._group(i)))
            except DcgmError as exc:
                self.log("WARNING", f"dcgmConfigEnforce GPU {i} failed (cap is live): {exc}")
                self.metrics.inc("dcgm_enforce_failures_total")
        return effective

    def restore_default(self, i: int) -> bool:
        try:
            self._set(i, self.default_w(i))
        except DcgmError as exc:
            self.log("ERROR", f"DCGM restore GPU {i} to default failed: {exc}")
            return False
        return True

    def shutdown(self) -> None:
        self.conn.close()
        super().shutdown()
