"""Process containers → real child processes, run as a container runtime runs them.

A `ProcessRuntime` maps containers (by image, pod name or container name) to local programs
(`Program`: a folder standing for the image's files at `mount`, plus the image's ENTRYPOINT/CMD).
For a matched container the kubelet gets a `ProcessWorkload`, which:
- builds the environment and command line from the manifest by the kubelet's rules (`podenv`),
  opens the program view (`view.py`, with the program's folder mounted at `mount`) and runs
  `python…` as the runner's interpreter;
- starts the program in its own session (so a signal reaches every process it starts), feeds
  each stdout/stderr line to the container log as it is written, and reports the exit status
  (128 + N for death by signal N, as containerd does) on the twin's clock;
- stops it with SIGTERM when its pod is deleted (the kubelet sends SIGKILL through `stop(graceful=
  False)` when the grace period ends).

Why plain `subprocess` children rather than namespaces, `proot` or containers: the twin must run
unprivileged on a laptop, and a Power Agent needs nothing a namespace would give it that the
program view (`view.py`: libraries, files, time) does not provide more cheaply.  What this costs
is written down in docs/design/twin-process.md.

No orphans: every child is started from one long-lived spawner thread with the parent-death
signal set to SIGKILL, so even a runner killed with SIGKILL takes its programs with it; `close()`
kills what is left and waits for it.
"""

from __future__ import annotations

import fnmatch
import http.client
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..apiserver.streams import STDERR, ExecOutput, ExecProcess, ExecRequest
from ..devices import DeviceDirectory
from ..workloads import ExecResult, HttpResponse, StartFailure, Workload, WorkloadContext, WorkloadRegistry
from .child._stepgraph_ports import POD_IP_ENV, read_table
from .child._stepgraph_ports import TABLE_ENV as PORTS_ENV
from .exec_stream import PipedExec, take_terminal
from .podenv import ContainerConfigError, command_line, container_env
from .reconciles import ReconcileTicks
from .view import SERVICE_ACCOUNT_DIR, Mount, NodeView, ProcessView, ViewError

_PYTHON = re.compile(r"python(3(\.\d+)?)?")
#: Twin seconds after which a program that has not waited yet counts as up anyway.
UP_WITHOUT_WAITING_S = 300.0


@dataclass(frozen=True)
class Program:
    """A local program standing in for a container image."""

    root: Path                                  # the folder the image has at `mount`
    mount: str = "/app"
    entrypoint: tuple[str, ...] = ()            # the image's ENTRYPOINT (used when the manifest has no command)
    cmd: tuple[str, ...] = ()                   # the image's CMD
    interpreter: str = sys.executable           # what `python`/`python3` in the command line means
    env: tuple[tuple[str, str], ...] = ()       # the image's ENV (the pod spec's variables win)

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))


@dataclass(frozen=True)
class ContainerMatch:
    """Which containers run a program: every given field must match (shell-style patterns).
    An image pattern without a tag matches every tag of that image."""

    image: str | None = None
    pod: str | None = None
    container: str | None = None

    def __call__(self, pod: dict, container: dict) -> bool:
        name = (pod.get("metadata") or {}).get("name", "")
        if self.pod is not None and not fnmatch.fnmatchcase(name, self.pod):
            return False
        if self.container is not None and not fnmatch.fnmatchcase(container.get("name", ""), self.container):
            return False
        if self.image is not None:
            image = str(container.get("image", ""))
            untagged = image.split("@", 1)[0].rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] or "@" in image \
                else image
            return fnmatch.fnmatchcase(image, self.image) or fnmatch.fnmatchcase(untagged, self.image)
        return True


def _set_parent_death_signal() -> None:
    """In the forked child: die with the spawner thread (PR_SET_PDEATHSIG = 1)."""
    _LIBC.prctl(1, signal.SIGKILL, 0, 0, 0)


try:
    import ctypes
    _LIBC: Any = ctypes.CDLL(None, use_errno=True)
    _LIBC.prctl  # noqa: B018 — resolve the symbol now, not in the forked child
    _PREEXEC: Callable[[], None] | None = _set_parent_death_signal
except (OSError, AttributeError):  # not Linux: close() is the only guard
    _PREEXEC = None


class ProcessRuntime:
    """One twin's process containers: the program table, the spawner, and every live child."""

    def __init__(self, store: Any, clock: Any, api_server: Callable[[], tuple[int, str]] | None = None) -> None:
        self.store, self.clock = store, clock
        self.devices = DeviceDirectory()     # the nodes' GPU models; the GPU side adds its boards
        self.api_server = api_server         # () → (HTTPS port on loopback, CA PEM): what a pod's in-cluster config uses
        self.token_for: Callable[[dict], str] = default_token  # pod → its service-account token
        self.reconciles = ReconcileTicks(clock)  # fed by the API server (world_install adds its middleware)
        self._view: NodeView | None = None
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="twin-spawner")
        self._children: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self.closed = False

    def port_table(self, pod_uid: str) -> Path:
        """The pod's table of container port → machine port (one per pod: its network namespace)."""
        folder = self.node_view().folder / "ports"
        folder.mkdir(exist_ok=True)
        return folder / pod_uid

    def node_view(self) -> NodeView:
        """What the programs see of the node (made at the first process container's start)."""
        with self._lock:
            if self.closed:  # a start racing the twin's stop must not make a view nobody closes
                raise ViewError("the process runtime is closed")
            if self._view is None:
                self._view = NodeView(self.devices, self.store, self.clock)
            return self._view

    def register(self, registry: WorkloadRegistry, name: str, match: ContainerMatch, program: Program) -> None:
        """Run `program` for every container `match` accepts (ahead of every built-in workload)."""
        before = registry.names()[0] if registry.names() else None
        registry.register(name, match, lambda pod, container: ProcessWorkload(self, program), before=before)

    # -- children -------------------------------------------------------------------------
    def spawn(self, argv: list[str], *, env: dict[str, str], cwd: Path, stdin: int | None = subprocess.DEVNULL,
              stdout: int = subprocess.PIPE, stderr: int = subprocess.PIPE, terminal: bool = False,
              ) -> subprocess.Popen:
        """Start a child from the spawner thread; FileNotFoundError/PermissionError if argv[0] cannot run.
        `terminal`: its stdin is a pseudo-terminal, which becomes its controlling terminal."""
        if self.closed:
            raise RuntimeError("the process runtime is closed")

        def child_setup() -> None:
            if _PREEXEC is not None:
                _PREEXEC()
            take_terminal()

        def start() -> subprocess.Popen:
            return subprocess.Popen(argv, env=env, cwd=cwd, stdin=stdin, stdout=stdout,
                                    stderr=stderr, start_new_session=True, close_fds=True,
                                    preexec_fn=child_setup if terminal else _PREEXEC)
        proc = self._spawner.submit(start).result()
        with self._lock:
            self._children.add(proc)
        return proc

    def forget(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._children.discard(proc)

    def children(self) -> list[subprocess.Popen]:
        with self._lock:
            return [p for p in self._children if p.poll() is None]

    def close(self) -> None:
        """SIGKILL every child's process group and reap it; idempotent."""
        self.closed = True
        with self._lock:
            children = list(self._children)
            self._children.clear()
        for proc in children:
            kill_group(proc, signal.SIGKILL)
        for proc in children:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                sys.stderr.write(f"twin: process {proc.pid} did not end after SIGKILL\n")
        self._spawner.shutdown(wait=True)
        if self._view is not None:
            self._view.close()
            self._view = None


def kubernetes_service_env(port: int) -> dict[str, str]:
    """The `kubernetes` Service's variables a kubelet gives every container, for the twin's HTTPS
    listener on loopback (a real cluster's ClusterIP and port 443 become 127.0.0.1 and `port`)."""
    host, tcp = "127.0.0.1", f"tcp://127.0.0.1:{port}"
    return {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": str(port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(port), "KUBERNETES_PORT": tcp, f"KUBERNETES_PORT_{port}_TCP": tcp,
            f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp", f"KUBERNETES_PORT_{port}_TCP_PORT": str(port),
            f"KUBERNETES_PORT_{port}_TCP_ADDR": host}


def default_token(pod: dict) -> str:
    """A pod's service-account token until the API server mints real ones (it accepts any bearer token)."""
    md = pod.get("metadata") or {}
    sa = (pod.get("spec") or {}).get("serviceAccountName") or "default"
    return f"twin-token:system:serviceaccount:{md.get('namespace', 'default')}:{sa}"


def kill_group(proc: subprocess.Popen, sig: int) -> None:
    """Signal the child's whole session (it leads its own process group)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # already gone


def exit_code_of(returncode: int) -> int:
    """Popen's returncode → the container's exit code (death by signal N is 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass
class _Running:
    proc: subprocess.Popen
    readers: list[threading.Thread] = field(default_factory=list)


class ProcessWorkload(Workload):
    """One container instance run as a child process (a restart gets a fresh workload)."""

    def __init__(self, runtime: ProcessRuntime, program: Program) -> None:
        self.runtime = runtime
        self.program = program
        self._running: _Running | None = None
        self._view: ProcessView | None = None
        self._env: dict[str, str] = {}
        self._https_port = 0
        self._ca_pem = ""
        self._ports: Path | None = None
        # On a scaled clock the program's start-up (interpreter, imports, first work) holds the
        # clock at real time, and the container is Ready once the program first waits (an agent:
        # after its first reconcile), so a step that waits for Ready meets an agent at work, not
        # one still importing. On real time: Ready at start, as without probes on a node.
        self.ready_on_start = getattr(runtime.clock, "child_time", None) is None
        self._up = threading.Event()

    # -- what the container sees ----------------------------------------------------------
    def environment(self, ctx: WorkloadContext) -> dict[str, str]:
        """The pod spec's variables after the runtime's own (PATH, HOSTNAME, the API server's address)."""
        pod = ctx.store.get("pods", ctx.namespace, ctx.pod_name)
        base = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOSTNAME": ctx.pod_name,
                **(kubernetes_service_env(self._https_port) if self._https_port else {})}
        for name in ("LANG", "LC_ALL", "TZ", "HOME"):  # the machine's locale and home
            if name in os.environ:
                base.setdefault(name, os.environ[name])

        def read(resource: str, namespace: str, name: str) -> dict | None:
            try:
                return ctx.store.get(resource, namespace, name)
            except Exception:  # the store's 404: the kubelet reports the missing object by name
                return None
        return container_env(pod, ctx.container, read, {**base, **dict(self.program.env)})

    def command(self, argv: list[str]) -> list[str]:
        """The machine's command line: paths under a mount rewritten by the view, `python…` → the
        program's interpreter."""
        out = self._view.argv(argv) if self._view is not None else list(argv)
        if out and _PYTHON.fullmatch(Path(out[0]).name):
            out[0] = self.program.interpreter
        return out

    # -- life cycle -----------------------------------------------------------------------
    def start(self, ctx: WorkloadContext) -> None:
        self.runtime.reconciles.restarted(ctx.node.name)
        if self.runtime.api_server is not None:
            try:
                self._https_port, self._ca_pem = self.runtime.api_server()
            except RuntimeError as exc:  # the twin stopped meanwhile, as for a spawn below
                raise StartFailure("CreateContainerError", str(exc)) from None
        try:
            spec_env = self.environment(ctx)
        except ContainerConfigError as exc:
            raise StartFailure("CreateContainerConfigError", str(exc)) from None
        argv = command_line(ctx.container, spec_env, self.program.entrypoint, self.program.cmd)
        if not argv:
            raise StartFailure("CreateContainerError", "failed to generate container spec: no command specified")
        def up() -> None:
            if not self._up.is_set():
                self._up.set()
                self._hold(False)
                ctx.clock.call_later(0, lambda: ctx.set_ready(True))  # kubelet state changes on the clock's thread
        if not self.ready_on_start:
            ctx.clock.call_later(UP_WITHOUT_WAITING_S, up)  # a program that never waits
        self._hold(True)  # its start-up is work: real time until its first wait
        try:
            self._start(ctx, argv, spec_env, up)
        except BaseException:
            self._hold(False)
            raise

    def _hold(self, on: bool) -> None:
        """This container's program runs (its start-up): a leaping clock runs at real time meanwhile."""
        running = getattr(self.runtime.clock, "running", None)
        if running is not None:
            running(self, on)

    def _start(self, ctx: WorkloadContext, argv: list[str], spec_env: dict[str, str], up: Callable[[], None]) -> None:
        try:
            self._view = self.runtime.node_view().open(ctx, [Mount(self.program.mount, str(self.program.root), True)],
                                                       up=up)
            if self._ca_pem and any(m.container_path == SERVICE_ACCOUNT_DIR for m in self._view.mounts):
                try:
                    token = self.runtime.token_for(ctx.pod)
                except Exception as exc:  # the store's 404: no such service account yet
                    raise ViewError(f"cannot mint the service-account token: {exc}") from None
                self._view.write_service_account(token, self._ca_pem)
        except ViewError as exc:
            self._close_view()
            raise StartFailure("CreateContainerConfigError", str(exc)) from None
        for note in self._view.notes:
            ctx.store.record_event(ctx.pod, "ProcessView", note, type="Warning", component="kubelet")
        ports = self.runtime.port_table(ctx.pod_uid)
        self._env = {**self._view.environ(spec_env), PORTS_ENV: str(ports),
                     POD_IP_ENV: str((ctx.store.get("pods", ctx.namespace, ctx.pod_name).get("status") or {})
                                     .get("podIP", "127.0.0.1"))}
        self._ports = ports
        try:
            argv = self.command(argv)
        except ViewError as exc:
            self._close_view()
            raise StartFailure("CreateContainerConfigError", str(exc)) from None
        try:
            proc = self.runtime.spawn(argv, env=self._env, cwd=self.program.root)
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            self._close_view()
            raise StartFailure("StartError", _start_error(argv[0], exc), exit_code=128) from None
        except RuntimeError as exc:  # the runtime closed meanwhile (the twin is stopping)
            self._close_view()
            raise StartFailure("CreateContainerError", str(exc)) from None
        running = _Running(proc)
        for stream in (proc.stdout, proc.stderr):
            reader = threading.Thread(target=_pump, args=(stream, ctx.log), daemon=True, name=f"twin-log-{proc.pid}")
            reader.start()
            running.readers.append(reader)
        self._running = running
        threading.Thread(target=self._wait, args=(ctx, running), daemon=True, name=f"twin-wait-{proc.pid}").start()

    def _close_view(self) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None

    def _wait(self, ctx: WorkloadContext, running: _Running) -> None:
        code = exit_code_of(running.proc.wait())
        for reader in running.readers:  # the last lines (a traceback) reach the log before the status
            reader.join()
        self.runtime.forget(running.proc)
        self.runtime.reconciles.restarted(ctx.node.name)
        self._up.set()  # this instance is over: its start-up timer must not mark the next one
        self._hold(False)
        self._close_view()
        if not self.runtime.closed:  # a twin going down ends its programs; no container restarts then
            ctx.clock.call_later(0, lambda: ctx.exit(code))  # kubelet state changes on the clock's thread

    def stop(self, ctx: WorkloadContext, graceful: bool) -> float | None:
        running = self._running
        if running is None or running.proc.poll() is not None:
            return None
        if not graceful:
            kill_group(running.proc, signal.SIGKILL)
            return None
        kill_group(running.proc, signal.SIGTERM)
        return math.inf  # the container ends when the program does (the waiter calls ctx.exit)

    @property
    def pid(self) -> int | None:
        return self._running.proc.pid if self._running else None

    def exec(self, ctx: WorkloadContext, argv: list[str], stdin: bytes | None) -> ExecResult:
        if self._view is None:  # the program has ended: the kubelet refuses exec before this
            return ExecResult(stderr=b"container not running\n", exit_code=126)
        argv = self.command(list(argv))
        if shutil.which(argv[0], path=self._env.get("PATH")) is None and not Path(argv[0]).is_file():
            return ExecResult(stderr=f'exec: "{argv[0]}": executable file not found in $PATH\n'.encode(), exit_code=127)
        try:
            proc = self.runtime.spawn(argv, env=self._env, cwd=self.program.root,
                                      stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        except (FileNotFoundError, PermissionError) as exc:
            return ExecResult(stderr=(_start_error(argv[0], exc) + "\n").encode(), exit_code=126)
        running = getattr(self.runtime.clock, "running", None)
        if running is not None:
            running(proc, True)  # an exec'd command works in real time, as on a node
        try:
            out, err = proc.communicate(stdin)
        finally:
            if running is not None:
                running(proc, False)
            self.runtime.forget(proc)
        return ExecResult(stdout=out, stderr=err, exit_code=exit_code_of(proc.returncode))

    def exec_stream(self, ctx: WorkloadContext, request: ExecRequest, output: ExecOutput) -> ExecProcess:
        """The real command, its input and output flowing while it runs (`exec_stream.py`)."""
        argv = self.command(list(request.argv)) if self._view is not None else list(request.argv)
        if self._view is None or (shutil.which(argv[0], path=self._env.get("PATH")) is None
                                  and not Path(argv[0]).is_file()):
            return super().exec_stream(ctx, request, output)  # the one-shot answers: not running, not found
        running = PipedExec(request, output, self.runtime.forget)
        try:
            running.start(lambda cmd, **streams: self.runtime.spawn(cmd, env=self._env, cwd=self.program.root,
                                                                    **streams), argv)
        except (FileNotFoundError, PermissionError) as exc:
            output.write(STDERR, (_start_error(argv[0], exc) + "\n").encode())
            output.exited(126)
        return running

    def http_get(self, ctx: WorkloadContext, port: int, path: str) -> HttpResponse | None:
        return http_get_port(self._ports, port, path) if self._running is not None else None

    def listening_port(self, ctx: WorkloadContext, port: int) -> int | None:
        return read_table(str(self._ports)).get(port) if self._running is not None and self._ports else None


def http_get_port(table: Path | None, port: int, path: str) -> HttpResponse | None:
    """GET `path` from the program's container `port` through the pod's port table; None when
    nothing listens there (the proxy's "connection refused")."""
    real = read_table(str(table)).get(port) if table is not None else None
    if real is None:
        return None
    conn = http.client.HTTPConnection("127.0.0.1", real, timeout=10)
    try:
        conn.request("GET", path, headers={"Host": f"localhost:{port}"})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type", "text/plain"), resp.read()
    except OSError:
        return None
    finally:
        conn.close()


def _start_error(cmd: str, exc: OSError) -> str:
    why = "no such file or directory" if isinstance(exc, FileNotFoundError) else "permission denied"
    return (f'failed to create containerd task: failed to create shim task: OCI runtime create failed: '
            f'runc create failed: unable to start container process: exec: "{cmd}": {why}: unknown')


def _pump(stream: Any, log: Callable[[str], None]) -> None:
    """Each line the program writes → one log entry, as the runtime's log driver splits them."""
    with stream:
        for raw in iter(stream.readline, b""):
            log(raw.decode(errors="replace").rstrip("\n"))
