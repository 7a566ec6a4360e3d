"""GPU board → a pynvml-compatible surface, so calling code is the same against the twin and a real node.

`NvmlLibrary` has pynvml's function names, argument order, units (milliwatts) and return shapes,
and raises pynvml's own `NVMLError_*` classes with the real codes. `as_module()` packages one
library as a module object named `pynvml` — what a probe script's `import pynvml` receives inside
a twin pod. Each container gets its own library: it sees only its visible GPUs (re-indexed from 0,
as the driver does inside a container) and may lack the privilege to write limits.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable

import pynvml

from .gpus import Gpu, GpuBoard

DRIVER_VERSION = "590.48.01"  # the 2026-05-21 live node
CUDA_DRIVER_VERSION = 13010
_NOT_MIG = 0xFFFFFFFF  # gpuInstanceId / computeInstanceId when MIG is off
_USED_MEMORY = 1 << 30  # each compute context reports 1 GiB; nobody reads it


class DeviceHandle:
    """Opaque handle (pynvml hands out a ctypes pointer); only this library can read it."""

    __slots__ = ("gpu", "index")

    def __init__(self, gpu: Gpu, index: int) -> None:
        self.gpu = gpu
        self.index = index

    def __repr__(self) -> str:
        return f"<twin nvmlDevice {self.index} {self.gpu.uuid}>"


def _error(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)  # pynvml maps the code to its NVMLError_* subclass


class NvmlLibrary:
    """One container's view of NVML over a node's GPU board."""

    def __init__(
        self,
        board: GpuBoard,
        visible_uuids: list[str] | None = None,
        privileged: bool = True,
        writes_denied: Callable[[], bool] = lambda: False,
    ) -> None:
        self._board = board
        self._visible = visible_uuids
        self._privileged = privileged
        self._writes_denied = writes_denied  # the `nvml_no_permission` fault switch
        self._init_count = 0

    # --- lifecycle ---------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self._init_count += 1

    def nvmlInitWithFlags(self, flags: int) -> None:
        self.nvmlInit()

    def nvmlShutdown(self) -> None:
        self._require_init()
        self._init_count -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._require_init()
        return DRIVER_VERSION

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._require_init()
        return CUDA_DRIVER_VERSION

    # --- enumeration -------------------------------------------------------------------------
    def nvmlDeviceGetCount(self) -> int:
        return len(self._devices())

    def nvmlDeviceGetHandleByIndex(self, index: int) -> DeviceHandle:
        devices = self._devices()
        if not isinstance(index, int) or not 0 <= index < len(devices):
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return DeviceHandle(devices[index], index)

    def nvmlDeviceGetHandleByUUID(self, uuid: str | bytes) -> DeviceHandle:
        wanted = uuid.decode() if isinstance(uuid, bytes) else uuid
        for index, gpu in enumerate(self._devices()):
            if gpu.uuid == wanted:
                return DeviceHandle(gpu, index)
        raise _error(pynvml.NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetIndex(self, handle: DeviceHandle) -> int:
        return self._check(handle).index

    def nvmlDeviceGetUUID(self, handle: DeviceHandle) -> str:
        return self._check(handle).gpu.uuid

    def nvmlDeviceGetName(self, handle: DeviceHandle) -> str:
        return self._check(handle).gpu.sku.name

    # --- power -------------------------------------------------------------------------------
    def nvmlDeviceGetPowerManagementLimit(self, handle: DeviceHandle) -> int:
        return self._check(handle).gpu.limit_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: DeviceHandle) -> int:
        return self._check(handle).gpu.limit_mw  # no other power capper in the twin

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: DeviceHandle) -> int:
        return self._check(handle).gpu.default_mw

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: DeviceHandle) -> list[int]:
        gpu = self._check(handle).gpu
        return [gpu.min_mw, gpu.max_mw]

    def nvmlDeviceSetPowerManagementLimit(self, handle: DeviceHandle, limit: int) -> None:
        gpu = self._check(handle).gpu
        if not self._privileged or self._writes_denied():
            raise _error(pynvml.NVML_ERROR_NO_PERMISSION)
        if not isinstance(limit, int) or not gpu.min_mw <= limit <= gpu.max_mw:
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        gpu.set_limit_mw(limit)

    # --- processes ---------------------------------------------------------------------------
    def nvmlDeviceGetComputeRunningProcesses(self, handle: DeviceHandle) -> list[pynvml.nvmlFriendlyObject]:
        gpu = self._check(handle).gpu
        return [
            pynvml.nvmlFriendlyObject(
                {"pid": pid, "usedGpuMemory": _USED_MEMORY, "gpuInstanceId": _NOT_MIG, "computeInstanceId": _NOT_MIG}
            )
            for pid in self._board.pids_on(gpu)
        ]

    nvmlDeviceGetComputeRunningProcesses_v2 = nvmlDeviceGetComputeRunningProcesses
    nvmlDeviceGetComputeRunningProcesses_v3 = nvmlDeviceGetComputeRunningProcesses

    # --- plumbing ----------------------------------------------------------------------------
    def _require_init(self) -> None:
        if self._init_count <= 0:
            raise _error(pynvml.NVML_ERROR_UNINITIALIZED)

    def _devices(self) -> list[Gpu]:
        self._require_init()
        if self._visible is None:
            return list(self._board.gpus)
        return [gpu for gpu in self._board.gpus if gpu.uuid in self._visible]

    def _check(self, handle: object) -> DeviceHandle:
        self._require_init()
        if not isinstance(handle, DeviceHandle):
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return handle

    def as_module(self) -> types.ModuleType:
        """This library as a `pynvml` module: real constants and error classes, twin functions."""
        module = types.ModuleType("pynvml", "pynvml bound to a twin node's NVML model")
        module.__dict__.update(_pynvml_names())
        for name in _function_names(type(self)):
            setattr(module, name, getattr(self, name))
        return module


# Every probe's `import pynvml` builds a module; pynvml has some 2,500 names, and sorting and
# filtering them each time cost milliseconds per exec. The names do not change while we run.
@functools.cache
def _pynvml_names() -> dict[str, object]:
    """pynvml's constants, error classes and structures, which the twin's module shares as they are."""
    return {name: getattr(pynvml, name) for name in dir(pynvml)
            if name.startswith(("NVML", "nvmlFriendlyObject", "nvmlExceptionClass", "c_nvml"))}


_FUNCTION_NAMES: dict[type, tuple[str, ...]] = {}


def _function_names(library: type) -> tuple[str, ...]:
    if library not in _FUNCTION_NAMES:
        _FUNCTION_NAMES[library] = tuple(name for name in dir(library) if name.startswith("nvml"))
    return _FUNCTION_NAMES[library]
