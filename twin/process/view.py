"""What a child program sees of the node: the seam the kubelet's process mode calls per container.

`NodeView` (one per twin) owns the Unix socket bridge to the twin's models, the built
`libnvidia-ml.so.1`, and a work folder holding the nodes' hostPath folders and each container's
files.  `NodeView.open(ctx)` gives one container start a `ProcessView`:

- `environ(base)` — the environment to start the program with: `base` (the pod spec's env,
  expanded by the caller) plus `LD_LIBRARY_PATH` → the twin's NVML library, `LD_PRELOAD` → its
  file view for programs that are not Python (`native/view_files.c`), `PYTHONPATH` → the
  start-up hook and the DCGM bindings (`child/`), the bridge socket and token, the time contract
  of a scaled clock, `TMPDIR` in the container's own layer;
- `argv(argv)` — the command line with absolute paths under a mount rewritten to the machine's
  path (the interpreter opens its script before any hook runs);
- `mounts` — container path → machine path: the pod's hostPath and emptyDir volumes at their
  mountPath, the service-account folder, and any the caller adds (the program's folder);
- `write_service_account(token, ca_pem)` — the files `load_incluster_config()` reads;
- `notes` — one line per thing this view cannot give (no C compiler, unsupported volumes);
- `close()` — ends the container's access to the bridge and removes its files.

Inside the child, `child/sitecustomize.py` applies the mounts, `/proc/<pid>/cgroup` and the clock
to the program's own Python (builtins.open, os.*, time.*, threading waits); see
docs/design/twin-process-view.md for why this mechanism and where it differs from a node.
"""

from __future__ import annotations

import base64
import compileall
import json
import os
import posixpath
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..dcgm import DCGM_ST_CONNECTION_NOT_VALID, DcgmConnection, DcgmError
from ..devices import DeviceDirectory, NodeDevices
from ..power_agent.workload import hostengine_reachable, is_privileged
from .bridge import ContainerEndpoints, ViewBridge
from .native_build import VIEW_LIBRARY, BuildFailed, NoCompiler, native_library_dir

CHILD_DIR = Path(__file__).parent / "child"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
HOSTENGINE_PORT = 5555  # nv-hostengine's port, which its Service exposes unchanged

SOCKET_ENV = "STEPGRAPH_VIEW_SOCKET"
TOKEN_ENV = "STEPGRAPH_VIEW_TOKEN"
CONFIG_ENV = "STEPGRAPH_VIEW_CONFIG"
FILES_ENV = "STEPGRAPH_VIEW_FILES"  # the same table for the LD_PRELOAD file view


class ViewError(RuntimeError):
    """A container cannot be given a view; the message is one line for the user."""


@dataclass(frozen=True)
class Mount:
    """`container_path` inside the program is `host_path` on this machine."""

    container_path: str
    host_path: str
    read_only: bool = False


@dataclass
class ProcessView:
    token: str
    folder: Path
    mounts: list[Mount]
    env: dict[str, str]
    notes: list[str] = field(default_factory=list)
    _close: Any = None

    def environ(self, base: dict[str, str]) -> dict[str, str]:
        """`base` plus this view's variables; search paths are prepended, not replaced."""
        merged = dict(base)
        for name, value in self.env.items():
            if name in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD") and merged.get(name):
                merged[name] = f"{value}{os.pathsep}{merged[name]}"
            else:
                merged[name] = value
        return merged

    def argv(self, argv: Iterable[str]) -> list[str]:
        """The command line the machine runs: an executable, or a Python interpreter's script, under
        a mount gets its machine path (both are opened before the hook runs); nothing else changes."""
        out = list(argv)
        if out and out[0].startswith("/"):
            out[0] = self.host_path(out[0]) or out[0]
        if not out or not posixpath.basename(out[0]).startswith("python"):
            return out
        i = 1
        while i < len(out) and out[i].startswith("-") and out[i] not in ("-c", "-m", "-"):
            if not out[i].startswith("--") and set(out[i][1:]) & set("IES") and out[i][1] not in "WX":
                raise ViewError(f"the command line's {out[i]!r} makes Python skip the twin's start-up hook (and so the "
                                f"node's files and clock) — process containers cannot run Python with -I, -E or -S")
            i += 2 if out[i] in ("-W", "-X") else 1  # the interpreter options that take a value
        if i < len(out) and out[i].startswith("/") and out[i - 1] not in ("-c", "-m"):
            out[i] = self.host_path(out[i]) or out[i]
        return out

    def host_path(self, container_path: str) -> str | None:
        """The machine's path for a path under one of the mounts, else None."""
        path = posixpath.normpath(container_path)
        for mount in sorted(self.mounts, key=lambda m: -len(m.container_path)):
            if mount.host_path == "/proc":
                continue  # the twin's /proc view lives in the hook, not on disk
            if path == mount.container_path or path.startswith(mount.container_path.rstrip("/") + "/"):
                return mount.host_path + path[len(mount.container_path.rstrip("/")):]
        return None

    def write_service_account(self, token: str, ca_pem: str) -> None:
        """Write the pod's token and the API server's CA where in-cluster config looks for them."""
        folder = self.host_path(SERVICE_ACCOUNT_DIR)
        if folder is None:
            raise ViewError("this pod does not mount a service account (automountServiceAccountToken: false)")
        Path(folder, "token").write_text(token, encoding="utf-8")
        Path(folder, "ca.crt").write_text(ca_pem, encoding="utf-8")

    def close(self) -> None:
        if self._close is not None:
            self._close()
            self._close = None


class NodeView:
    """One twin's views: the bridge, the NVML library build, the nodes' hostPath folders."""

    def __init__(self, directory: DeviceDirectory, store: Any, clock: Any, workdir: Path | None = None) -> None:
        self.directory = directory
        self.store = store
        self.clock = clock
        # In the temp directory it is named like every stepgraph temp folder (stepgraph-<what>-<pid>-),
        # so a later run removes the folder of a runner killed before it could; in a caller's
        # folder (which the caller removes) a short name keeps the socket path within 108 bytes.
        prefix = "sgv-" if workdir is not None else f"stepgraph-view-{os.getpid()}-"
        self.folder = Path(tempfile.mkdtemp(prefix=prefix, dir=workdir or _short_tmp()))
        self._bridge = ViewBridge(self.folder)
        # The children run with PYTHONDONTWRITEBYTECODE, so compile the hook once here: every
        # interpreter start (each exec'd probe) then loads bytecode instead of compiling source.
        compileall.compile_dir(str(CHILD_DIR), quiet=2)
        self._native_dir: Path | None = None
        self.native_problem: str | None = None  # the one line the process mode prints without a compiler
        self._attached: list[NodeDevices] = []
        self._views: dict[str, ProcessView] = {}

    # -- per container --------------------------------------------------------------------------
    def open(self, ctx: Any, mounts: Iterable[Mount] = (), up: Callable[[], None] | None = None) -> ProcessView:
        """A view for one start of the container `ctx.container` of pod `ctx.pod` (a WorkloadContext)."""
        time_env = _time_contract(self.clock, self.folder)
        devices = self.directory.get(ctx.node.name)
        token = secrets.token_hex(12)
        folder = self.folder / "c" / token
        notes: list[str] = []
        all_mounts = [*self._volume_mounts(ctx, devices, notes), *mounts]  # may refuse the pod: before any file
        for path in (p for m in all_mounts for p in (m.container_path, m.host_path)):
            if "\t" in path or "\n" in path:
                raise ViewError(f"the mount path {path!r} holds a TAB or a newline, which process containers cannot mount")
        (folder / "rootfs").mkdir(parents=True)
        (folder / "tmp").mkdir()
        sa = self._service_account(ctx, folder)
        if sa is not None:
            all_mounts.append(sa)
        proc_roots = ["/proc", *[m.container_path for m in all_mounts if m.host_path == "/proc"]]
        env = {
            SOCKET_ENV: str(self._bridge.path),
            TOKEN_ENV: token,
            CONFIG_ENV: str(folder / "view.json"),
            "PYTHONPATH": str(CHILD_DIR),
            "PYTHONDONTWRITEBYTECODE": "1",  # never leave __pycache__ in the user's program folder
            "TMPDIR": str(folder / "tmp"),
            **time_env,
        }
        native = self._native()
        if native is not None:
            if devices is not None:  # a node without GPUs has no driver library
                env["LD_LIBRARY_PATH"] = str(native)
            # every dynamically linked program (an exec'd `cat`, a shell, a C agent) gets the files too
            env["LD_PRELOAD"] = str(native / VIEW_LIBRARY)
            env[FILES_ENV] = str(folder / "files.tsv")
        elif self.native_problem:
            notes.append(self.native_problem)
        config = {
            "mounts": [[m.container_path, m.host_path, m.read_only] for m in all_mounts if m.host_path != "/proc"],
            "proc_roots": proc_roots,
            "own_folder": str(self.folder),
            "rootfs": str(folder / "rootfs"),
        }
        (folder / "view.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
        (folder / "files.tsv").write_text(_files_table(config), encoding="utf-8")
        endpoints = self._endpoints(ctx, devices)
        if up is not None:
            endpoints.up = up
        self._bridge.register(token, endpoints)

        def close() -> None:
            self._bridge.unregister(token)
            self._views.pop(token, None)
            shutil.rmtree(folder, ignore_errors=True)

        view = ProcessView(token, folder, all_mounts, env, notes, close)
        self._views[token] = view
        return view

    def close(self) -> None:
        for view in list(self._views.values()):
            view.close()
        self._bridge.close()
        for devices in self._attached:
            devices.files.detach()
        shutil.rmtree(self.folder, ignore_errors=True)

    def calls(self) -> int:
        """Bridge requests answered so far (all containers)."""
        return self._bridge.calls

    # -- pieces ---------------------------------------------------------------------------------
    def _native(self) -> Path | None:
        """The folder of the built NVML library and file view, built at the first container's start."""
        if self._native_dir is None and self.native_problem is None:
            try:
                self._native_dir = native_library_dir()
            except (NoCompiler, BuildFailed) as err:
                self.native_problem = str(err)
        return self._native_dir

    def _endpoints(self, ctx: Any, devices: NodeDevices | None) -> ContainerEndpoints:
        pod, container, host = ctx.pod, ctx.container, ctx.host
        host_pid = bool((pod.get("spec") or {}).get("hostPID"))
        pod_uid = pod["metadata"]["uid"]
        privileged = is_privileged(container)
        visible = tuple(ctx.gpus) or None  # as the in-process workloads: no claim and no env → every GPU

        def cgroup(pid: int) -> str | None:
            try:
                proc = host.process(pid)
            except ProcessLookupError:
                return None
            if not host_pid and proc.pod_uid != pod_uid:
                raise ProcessLookupError(pid)  # another pod's PID namespace
            return host.cgroup(pid)

        def dcgm(address: str, port: int) -> DcgmConnection:
            engine = devices.hostengine if devices else None
            if engine is None or port != HOSTENGINE_PORT or not hostengine_reachable(address, self.store, ctx.namespace):
                raise DcgmError(DCGM_ST_CONNECTION_NOT_VALID, f"unable to connect to the hostengine at {address}:{port}")
            return engine.connect()

        nvml = (lambda: devices.nvml(visible, privileged)) if devices else None
        endpoints = ContainerEndpoints(nvml=nvml, cgroup=cgroup, dcgm=dcgm)
        if hasattr(self.clock, "running"):  # a clock that leaps while every program waits
            endpoints.running = self.clock.running
        return endpoints

    def _volume_mounts(self, ctx: Any, devices: NodeDevices | None, notes: list[str]) -> list[Mount]:
        """The container's volumeMounts of hostPath and emptyDir volumes; others are noted."""
        volumes = {v.get("name"): v for v in (ctx.pod.get("spec") or {}).get("volumes") or []}
        mounts = []
        for vm in ctx.container.get("volumeMounts") or []:
            volume = volumes.get(vm.get("name")) or {}
            read_only = bool(vm.get("readOnly"))
            if "hostPath" in volume:
                source = posixpath.normpath(volume["hostPath"].get("path") or "/")
                host = "/proc" if source == "/proc" else str(self._node_root(ctx.node.name, devices) / source.lstrip("/"))
                if host != "/proc":
                    _prepare_host_path(Path(host), volume["hostPath"].get("type") or "", vm.get("name"))
            elif "emptyDir" in volume:
                host = str(self.folder / "pods" / ctx.pod["metadata"]["uid"] / "emptyDir" / vm["name"])
                Path(host).mkdir(parents=True, exist_ok=True)
            elif any(k in volume for k in ("configMap", "secret", "projected")):
                host = str(self._write_volume(ctx, volume, notes))
                read_only = True  # the kubelet mounts these read-only, whatever the volumeMount says
            else:
                kind = next((k for k in volume if k != "name"), "unknown")
                notes.append(f"volume {vm.get('name')!r} ({kind}) is not mounted in process containers — "
                             f"only hostPath, emptyDir, configMap, secret and projected are")
                continue
            if vm.get("subPath"):
                host = posixpath.join(host, vm["subPath"])
            mounts.append(Mount(posixpath.normpath(vm["mountPath"]), host, read_only))
        return mounts

    def _write_volume(self, ctx: Any, volume: dict, notes: list[str]) -> Path:
        """A configMap, secret or projected volume's files, written afresh at each container start
        from the objects as they are then (a node's kubelet also refreshes them later)."""
        name = volume["name"]
        folder = self.folder / "pods" / ctx.pod["metadata"]["uid"] / "volumes" / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        if "projected" in volume:
            spec = volume["projected"] or {}
            sources = spec.get("sources") or []
        else:
            spec = volume.get("configMap") or volume.get("secret") or {}
            sources = [volume]
        default_mode = spec.get("defaultMode", 0o644)
        for source in sources:
            kind = "configMap" if "configMap" in source else "secret" if "secret" in source else None
            if kind is None:
                other = next((k for k in source if k != "name"), "unknown")
                notes.append(f"volume {name!r}: a {other} source is not projected in process containers — "
                             f"only configMap and secret sources are")
                continue
            ref = source[kind] or {}
            files = _volume_files(ctx, name, kind, ref)
            for relative, (data, mode) in files.items():
                target = folder / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                target.chmod(default_mode if mode is None else mode)
        return folder

    def _node_root(self, node_name: str, devices: NodeDevices | None) -> Path:
        """The node's `/` for hostPath volumes: its HostFiles' folder, so in-process readers agree."""
        if devices is None:
            return self.folder / "nodes" / node_name
        if devices.files.root is None:
            devices.files.attach(self.folder / "nodes" / node_name)
            self._attached.append(devices)
        assert devices.files.root is not None
        return devices.files.root

    def _service_account(self, ctx: Any, folder: Path) -> Mount | None:
        spec = ctx.pod.get("spec") or {}
        if spec.get("automountServiceAccountToken") is False:
            return None
        sa = folder / "serviceaccount"
        sa.mkdir()
        (sa / "namespace").write_text(ctx.namespace, encoding="utf-8")
        return Mount(SERVICE_ACCOUNT_DIR, str(sa), read_only=True)


def _files_table(config: dict) -> str:
    """The view's table for the LD_PRELOAD library: one TAB-separated entry a line (`open` has
    refused paths holding a TAB or newline)."""
    lines = [f"proc\t{root}" for root in config["proc_roots"]]
    lines += [f"mount\t{c}\t{h}\t{int(ro)}" for c, h, ro in config["mounts"]]
    lines += [f"own\t{config['own_folder']}", f"rootfs\t{config['rootfs']}"]
    return "\n".join(lines) + "\n"


def _volume_files(ctx: Any, volume: str, kind: str, ref: dict) -> dict[str, tuple[bytes, int | None]]:
    """{path in the volume: (bytes, mode or None)} of one configMap or secret, by the kubelet's rules:
    every key, or only `items` (key → path, mode); a missing object or key refuses the start unless
    `optional`. Raises ViewError with the kubelet's message."""
    object_name = ref.get("name") or ref.get("secretName") or ""
    resource, noun = ("configmaps", "configmap") if kind == "configMap" else ("secrets", "secret")
    try:
        obj = ctx.store.get(resource, ctx.namespace, object_name)
    except Exception:  # the store's 404
        if ref.get("optional"):
            return {}
        raise ViewError(f'MountVolume.SetUp failed for volume "{volume}" : {noun} "{object_name}" not found') from None
    values: dict[str, bytes] = {}
    if kind == "configMap":
        values.update({k: str(v).encode() for k, v in (obj.get("data") or {}).items()})
        values.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    else:
        values.update({k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()})
        values.update({k: str(v).encode() for k, v in (obj.get("stringData") or {}).items()})
    items = ref.get("items")
    if not items:
        return {key: (value, None) for key, value in values.items()}
    out: dict[str, tuple[bytes, int | None]] = {}
    for item in items:
        key, path = item.get("key", ""), posixpath.normpath(item.get("path") or "")
        if path.startswith(("/", "..")) or path == ".":
            raise ViewError(f'volume "{volume}": item path {item.get("path")!r} must be relative, without ".."')
        if key not in values:
            if ref.get("optional"):
                continue
            raise ViewError(f'MountVolume.SetUp failed for volume "{volume}" : {noun} references non-existent '
                            f'config key: {key}')
        out[path] = (values[key], item.get("mode"))
    return out


def _prepare_host_path(path: Path, kind: str, volume: str | None) -> None:
    """What the kubelet checks or creates for a hostPath volume of this `type` before the start."""
    if kind in ("", "DirectoryOrCreate"):
        path.mkdir(parents=True, exist_ok=True)
    elif kind == "FileOrCreate":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    elif (kind == "Directory" and not path.is_dir()) or (kind == "File" and not path.is_file()):
        raise ViewError(f"hostPath volume {volume!r}: {kind.lower()} {path.name!r} does not exist on the node "
                        f"— use type {kind}OrCreate, or create it first")
    elif kind not in ("Directory", "File"):
        raise ViewError(f"hostPath volume {volume!r}: type {kind} is not modelled in process containers "
                        f"— use Directory, DirectoryOrCreate, File or FileOrCreate")


def _time_contract(clock: Any, folder: Path) -> dict[str, str]:
    """A scaled clock's contract for the child; real time needs none; virtual time cannot be given."""
    child_time = getattr(clock, "child_time", None)
    if child_time is not None:
        return child_time(folder)
    if hasattr(clock, "advance"):  # VirtualClock: time that moves only when the test sleeps
        raise ViewError("process containers need a scaled or real clock, and this twin runs the virtual one "
                        "— start it with clock 'scaled' (or 'real')")
    return {}


def _short_tmp() -> str:
    """A temp folder short enough for a Unix socket path (108 bytes)."""
    base = tempfile.gettempdir()
    return base if len(base) < 60 else "/tmp"
