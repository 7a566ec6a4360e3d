"""Process containers → real child processes, run as a container runtime runs them.

A `ProcessRuntime` maps containers (by image, pod name or container name) to local programs
(`Program`: a folder standing for the image's files at `mount`, plus the image's ENTRYPOINT/CMD).
For a matched container the kubelet gets a `ProcessWorkload`, which:
- builds the environment and command line from the manifest by the kubelet's rules (`podenv`),
  runs `python…` as the runner's interpreter and paths under `mount` from the program's folder;
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
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..workloads import ExecResult, StartFailure, Workload, WorkloadContext, WorkloadRegistry
from .podenv import ContainerConfigError, command_line, container_env

_PYTHON = re.compile(r"python(3(\.\d+)?)?")


@dataclass(frozen=True)
class Program:
    """A local program standing in for a container image."""

    root: Path                                  # the folder the image has at `mount`
    mount: str = "/app"
    entrypoint: tuple[str, ...] = ()            # the image's ENTRYPOINT (used when the manifest has no command)
    cmd: tuple[str, ...] = ()                   # the image's CMD
    interpreter: str = sys.executable           # what `python`/`python3` in the command line means

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

    def __init__(self) -> None:
        self._workdir: Path | None = None
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="twin-spawner")
        self._children: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self._closed = False
        self.base_env: dict[str, str] = {}   # set by the twin: KUBERNETES_SERVICE_HOST/PORT and such

    @property
    def workdir(self) -> Path:
        """This twin's scratch folder for its programs (made on first use, removed by `close`)."""
        with self._lock:
            if self._workdir is None:
                self._workdir = Path(tempfile.mkdtemp(prefix="stepgraph-proc-"))
            return self._workdir

    def register(self, registry: WorkloadRegistry, name: str, match: ContainerMatch, program: Program) -> None:
        """Run `program` for every container `match` accepts (ahead of every built-in workload)."""
        before = registry.names()[0] if registry.names() else None
        registry.register(name, match, lambda pod, container: ProcessWorkload(self, program), before=before)

    # -- children -------------------------------------------------------------------------
    def spawn(self, argv: list[str], *, env: dict[str, str], cwd: Path, stdin: int | None = subprocess.DEVNULL,
              ) -> subprocess.Popen:
        """Start a child from the spawner thread; FileNotFoundError/PermissionError if argv[0] cannot run."""
        if self._closed:
            raise RuntimeError("the process runtime is closed")

        def start() -> subprocess.Popen:
            return subprocess.Popen(argv, env=env, cwd=cwd, stdin=stdin, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
                                    preexec_fn=_PREEXEC)
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
        self._closed = True
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
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None


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
        self._env: dict[str, str] = {}

    # -- what the container sees ----------------------------------------------------------
    def environment(self, ctx: WorkloadContext) -> dict[str, str]:
        pod = ctx.store.get("pods", ctx.namespace, ctx.pod_name)
        base = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOSTNAME": ctx.pod_name,
                **self.runtime.base_env}
        for name in ("LANG", "LC_ALL", "TZ", "TMPDIR", "HOME"):  # the host's locale and scratch space
            if name in os.environ:
                base.setdefault(name, os.environ[name])

        def read(resource: str, namespace: str, name: str) -> dict | None:
            try:
                return ctx.store.get(resource, namespace, name)
            except Exception:  # the store's 404: the kubelet reports the missing object by name
                return None
        return container_env(pod, ctx.container, read, base)

    def localize(self, argv: list[str]) -> list[str]:
        """The image's paths → the program's folder; `python…` → the program's interpreter."""
        mount = self.program.mount.rstrip("/") + "/"
        out = [str(self.program.root / a[len(mount):]) if a.startswith(mount) else a for a in argv]
        if out and _PYTHON.fullmatch(Path(out[0]).name):
            out[0] = self.program.interpreter
        return out

    # -- life cycle -----------------------------------------------------------------------
    def start(self, ctx: WorkloadContext) -> None:
        try:
            self._env = self.environment(ctx)
        except ContainerConfigError as exc:
            raise StartFailure("CreateContainerConfigError", str(exc)) from None
        argv = self.localize(command_line(ctx.container, self._env, self.program.entrypoint, self.program.cmd))
        if not argv:
            raise StartFailure("CreateContainerError", "failed to generate container spec: no command specified")
        try:
            proc = self.runtime.spawn(argv, env=self._env, cwd=self.program.root)
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            raise StartFailure("StartError", _start_error(argv[0], exc), exit_code=128) from None
        running = _Running(proc)
        for stream in (proc.stdout, proc.stderr):
            reader = threading.Thread(target=_pump, args=(stream, ctx.log), daemon=True, name=f"twin-log-{proc.pid}")
            reader.start()
            running.readers.append(reader)
        self._running = running
        threading.Thread(target=self._wait, args=(ctx, running), daemon=True, name=f"twin-wait-{proc.pid}").start()

    def _wait(self, ctx: WorkloadContext, running: _Running) -> None:
        code = exit_code_of(running.proc.wait())
        for reader in running.readers:  # the last lines (a traceback) reach the log before the status
            reader.join()
        self.runtime.forget(running.proc)
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
        argv = self.localize(list(argv))
        if shutil.which(argv[0], path=self._env.get("PATH")) is None and not Path(argv[0]).is_file():
            return ExecResult(stderr=f'exec: "{argv[0]}": executable file not found in $PATH\n'.encode(), exit_code=127)
        try:
            proc = self.runtime.spawn(argv, env=self._env, cwd=self.program.root,
                                      stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        except (FileNotFoundError, PermissionError) as exc:
            return ExecResult(stderr=(_start_error(argv[0], exc) + "\n").encode(), exit_code=126)
        try:
            out, err = proc.communicate(stdin)
        finally:
            self.runtime.forget(proc)
        return ExecResult(stdout=out, stderr=err, exit_code=exit_code_of(proc.returncode))


def _start_error(cmd: str, exc: OSError) -> str:
    why = "no such file or directory" if isinstance(exc, FileNotFoundError) else "permission denied"
    return (f'failed to create containerd task: failed to create shim task: OCI runtime create failed: '
            f'runc create failed: unable to start container process: exec: "{cmd}": {why}: unknown')


def _pump(stream: Any, log: Callable[[str], None]) -> None:
    """Each line the program writes → one log entry, as the runtime's log driver splits them."""
    with stream:
        for raw in iter(stream.readline, b""):
            log(raw.decode(errors="replace").rstrip("\n"))
