"""The twin's side of a child program's node view: one Unix socket per twin, one line per call.

A child process reaches the twin's models through this socket: the twin's `libnvidia-ml.so.1`
(NVML calls), the start-up hook (`/proc/<pid>/cgroup` of the twin's host PIDs) and the twin's
DCGM bindings (the hostengine).  Each connection first says which container it belongs to
(`hello <token>`), so a call is answered with that container's GPUs, PIDs and privileges.

Every request and reply is one line of TAB-separated fields; a reply starts with a status code:
- `nvml <function> <args…>` → `<nvmlReturn_t> <values…>` (the C library parses these)
- `cgroup <pid>` → `0 <text as JSON>`, `1` (not a twin PID: the machine's own /proc answers) or
  `2` (a twin PID this container cannot see, or one that has ended: no such file)
- `dcgm <request as JSON>` → `0 <result as JSON>` or `<DCGM_ST_* code> <message>`
- `up` → `0` (the start-up hook, at the program's first wait: its start-up is over)
- `run 1` / `run 0 [<twin time>]` → `0` (the hook: one of the process's threads left a wait / none
  is out of one any more, and the earliest of their waits ends then); a connection's end is `run 0`

Each connection gets its own NVML library object, so `nvmlInit`'s reference count is per
process, as with the real driver.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pynvml

from ..dcgm import DCGM_ST_BADPARAM, DCGM_ST_CONNECTION_NOT_VALID, DCGM_ST_GENERIC_ERROR, DcgmConnection, DcgmError
from ..nvml import DeviceHandle, NvmlLibrary

CGROUP_FOUND, CGROUP_NOT_OURS, CGROUP_NO_SUCH_FILE = 0, 1, 2
_NVML_UNKNOWN = pynvml.NVML_ERROR_UNKNOWN


@dataclass
class ContainerEndpoints:
    """What one container's connections may reach.

    - `nvml()` → a fresh NVML library for one process (None: this container has no NVML).
    - `cgroup(pid)` → the cgroup text of a twin PID, None when the PID is not the twin's;
      raises ProcessLookupError for a twin PID the container cannot see.
    - `dcgm(host, port)` → a hostengine connection, or DcgmError as pydcgm's connect raises it.
    """

    nvml: Callable[[], NvmlLibrary] | None
    cgroup: Callable[[int], str | None]
    dcgm: Callable[[str, int], DcgmConnection] | None = None
    up: Callable[[], None] = lambda: None  # the program's start-up is over (its first wait)
    # (key, on, wakes): the process `key` runs, or waits until twin time `wakes` (None: until woken);
    # the scaled clock leaps only while none runs, and never past a wake-up
    running: Callable[[object, bool, float | None], None] = lambda key, on, wakes: None


@dataclass(eq=False)  # one per process, hashed by identity: the clock's key for it
class _Connection:
    endpoints: ContainerEndpoints
    nvml: NvmlLibrary | None = None
    dcgm_handles: dict[int, DcgmConnection] = field(default_factory=dict)
    next_handle: int = 1


class ViewBridge:
    """The Unix socket server; `register(token, endpoints)` admits one container's processes."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "view.sock"
        self._containers: dict[str, ContainerEndpoints] = {}
        self._open: set[socket.socket] = set()
        self.calls = 0  # requests answered, all containers (the benchmark reads it)
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.path))
        os.chmod(self.path, 0o600)  # only this user's processes may speak for a container
        self._listener.listen(64)
        self._thread = threading.Thread(target=self._accept, name="twin-view-bridge", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        """One thread per connection, until `close` shuts the listening socket down.

        A blocking accept, not a server loop that polls for its stop: the shutdown wakes it at
        once (a twin with a process container stops in milliseconds, not at the next poll)."""
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return  # shut down by close()
            threading.Thread(target=self._connection, args=(sock,), name="twin-view-connection", daemon=True).start()

    def _connection(self, sock: socket.socket) -> None:
        with sock, sock.makefile("rb") as rfile:
            self._serve(sock, rfile)

    def register(self, token: str, endpoints: ContainerEndpoints) -> None:
        with self._lock:
            self._containers[token] = endpoints

    def unregister(self, token: str) -> None:
        with self._lock:
            self._containers.pop(token, None)

    def close(self) -> None:
        self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept: no new connection
        self._thread.join(timeout=5)
        self._listener.close()
        with self._lock:
            for conn in list(self._open):
                try:
                    conn.shutdown(socket.SHUT_RDWR)  # wakes the handler thread blocked in readline
                except OSError:
                    pass  # the child already closed its end
        self.path.unlink(missing_ok=True)

    # -- one connection ------------------------------------------------------------------------
    def _serve(self, sock: socket.socket, rfile: Any) -> None:
        with self._lock:
            self._open.add(sock)
        conn: _Connection | None = None
        try:
            first = rfile.readline().decode().rstrip("\n").split("\t")
            with self._lock:
                endpoints = self._containers.get(first[1]) if first[0] == "hello" and len(first) == 2 else None
            if endpoints is None:
                sock.sendall(b"-1\tunknown container\n")
                return
            sock.sendall(b"0\n")
            conn = _Connection(endpoints)
            for raw in rfile:
                fields = raw.decode().rstrip("\n").split("\t")
                with self._lock:
                    if first[1] not in self._containers:  # the container ended: its processes lose the node
                        return
                    self.calls += 1
                sock.sendall(("\t".join(_answer(conn, fields)) + "\n").encode())
        except (BrokenPipeError, ConnectionResetError):
            pass  # the child exited mid-call; nothing to answer
        finally:
            with self._lock:
                self._open.discard(sock)
            if conn is not None:
                conn.endpoints.running(conn, False, None)  # an ended process no longer holds the clock
            for handle in conn.dcgm_handles.values() if conn else ():
                handle.close()


def _answer(conn: _Connection, fields: list[str]) -> list[str]:
    kind, args = fields[0], fields[1:]
    if kind == "up" and not args:  # the start-up hook: the program has begun to wait
        conn.endpoints.up()
        return ["0"]
    if kind == "run" and args in (["1"], ["0"]):
        conn.endpoints.running(conn, args[0] == "1", None)
        return ["0"]
    if kind == "run" and len(args) == 2 and args[0] == "0":
        conn.endpoints.running(conn, False, float(args[1]))
        return ["0"]
    if kind == "nvml" and args:
        return _nvml(conn, args[0], args[1:])
    if kind == "cgroup" and len(args) == 1 and args[0].isdigit():
        try:
            text = conn.endpoints.cgroup(int(args[0]))
        except ProcessLookupError:
            return [str(CGROUP_NO_SUCH_FILE)]
        return [str(CGROUP_NOT_OURS)] if text is None else [str(CGROUP_FOUND), json.dumps(text)]
    if kind == "dcgm" and len(args) == 1:
        return _dcgm(conn, json.loads(args[0]))
    return ["-1", f"malformed request {fields[:2]!r}"]


# -- NVML ---------------------------------------------------------------------------------------
def _nvml(conn: _Connection, function: str, args: list[str]) -> list[str]:
    if conn.endpoints.nvml is None:
        return [str(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)]
    if conn.nvml is None:
        conn.nvml = conn.endpoints.nvml()
    lib = conn.nvml
    try:
        values = _NVML_CALLS[function](lib, *[int(a) if a.isdigit() else a for a in args])
    except pynvml.NVMLError as err:
        return [str(err.value)]
    except (KeyError, TypeError, ValueError):
        return [str(_NVML_UNKNOWN)]
    return ["0", *(str(v) for v in values)]


def _nothing(_: object) -> list[object]:
    return []


def _handle(lib: NvmlLibrary, index: int) -> DeviceHandle:
    return lib.nvmlDeviceGetHandleByIndex(index)


def _processes(lib: NvmlLibrary, index: int) -> list[object]:
    procs = lib.nvmlDeviceGetComputeRunningProcesses(_handle(lib, index))
    return [len(procs), *(f"{p.pid},{p.usedGpuMemory},{p.gpuInstanceId},{p.computeInstanceId}" for p in procs)]


_NVML_CALLS: dict[str, Callable[..., list[object]]] = {
    "nvmlInitWithFlags": lambda lib, flags: _nothing(lib.nvmlInitWithFlags(flags)),
    "nvmlShutdown": lambda lib: _nothing(lib.nvmlShutdown()),
    "nvmlSystemGetDriverVersion": lambda lib: [lib.nvmlSystemGetDriverVersion()],
    "nvmlSystemGetCudaDriverVersion": lambda lib: [lib.nvmlSystemGetCudaDriverVersion()],
    "nvmlDeviceGetCount": lambda lib: [lib.nvmlDeviceGetCount()],
    "nvmlDeviceGetHandleByIndex": lambda lib, i: [_handle(lib, i).index],
    "nvmlDeviceGetHandleByUUID": lambda lib, uuid: [lib.nvmlDeviceGetHandleByUUID(str(uuid)).index],
    "nvmlDeviceGetIndex": lambda lib, i: [lib.nvmlDeviceGetIndex(_handle(lib, i))],
    "nvmlDeviceGetUUID": lambda lib, i: [lib.nvmlDeviceGetUUID(_handle(lib, i))],
    "nvmlDeviceGetName": lambda lib, i: [lib.nvmlDeviceGetName(_handle(lib, i))],
    "nvmlDeviceGetPowerManagementLimit": lambda lib, i: [lib.nvmlDeviceGetPowerManagementLimit(_handle(lib, i))],
    "nvmlDeviceGetPowerManagementDefaultLimit":
        lambda lib, i: [lib.nvmlDeviceGetPowerManagementDefaultLimit(_handle(lib, i))],
    "nvmlDeviceGetEnforcedPowerLimit": lambda lib, i: [lib.nvmlDeviceGetEnforcedPowerLimit(_handle(lib, i))],
    "nvmlDeviceGetPowerManagementLimitConstraints":
        lambda lib, i: lib.nvmlDeviceGetPowerManagementLimitConstraints(_handle(lib, i)),
    "nvmlDeviceSetPowerManagementLimit":
        lambda lib, i, mw: _nothing(lib.nvmlDeviceSetPowerManagementLimit(_handle(lib, i), mw)),
    "nvmlDeviceGetComputeRunningProcesses": _processes,
}


# -- DCGM ---------------------------------------------------------------------------------------
def _dcgm(conn: _Connection, request: dict) -> list[str]:
    try:
        result = _dcgm_call(conn, request)
    except DcgmError as err:
        return [str(err.value), str(err)]
    except (KeyError, TypeError, ValueError) as err:
        return [str(DCGM_ST_BADPARAM), f"bad request: {err}"]
    return ["0", json.dumps(result)]


def _dcgm_call(conn: _Connection, request: dict) -> object:
    op = request["op"]
    if op == "connect":
        if conn.endpoints.dcgm is None:
            raise DcgmError(DCGM_ST_CONNECTION_NOT_VALID, "no hostengine can be reached from this container")
        handle = conn.next_handle
        conn.next_handle += 1
        conn.dcgm_handles[handle] = conn.endpoints.dcgm(str(request["host"]), int(request["port"]))
        return handle
    dcgm = conn.dcgm_handles.get(int(request["handle"]))
    if dcgm is None:
        raise DcgmError(DCGM_ST_CONNECTION_NOT_VALID, "handle was shut down")
    if op == "disconnect":
        conn.dcgm_handles.pop(int(request["handle"])).close()
        return None
    if op == "gpu_ids":
        return dcgm.get_all_gpu_ids()
    if op == "gpu_attributes":
        return dcgm.gpu_attributes(int(request["gpu"]))
    if op == "group_create":
        return dcgm.create_group(str(request["name"]))
    if op == "group_add_gpu":
        dcgm.add_gpu(int(request["group"]), int(request["gpu"]))
        return None
    if op == "group_destroy":
        dcgm.destroy_group(int(request["group"]))
        return None
    if op == "config_set_power":
        dcgm.config_set_power_limit(int(request["group"]), int(request["watts"]))
        return None
    if op == "config_enforce":
        dcgm.config_enforce(int(request["group"]))
        return None
    raise DcgmError(DCGM_ST_GENERIC_ERROR, f"operation {op!r} is not modelled by the twin's hostengine")
