"""Pod containers → what they *do*: a registry of (matcher, factory) pairs and the Workload API.

The kubelet asks the registry once per container when the pod starts: matchers are tried in
registration order and the first that accepts `(pod, container)` supplies the factory.  The GPU
side registers its Power Agent, planners and DCGM hostengine here; everything else gets
`DefaultWorkload`, which runs until deleted and knows a handful of shell built-ins.

A Workload's hooks receive a `WorkloadContext` (the pod snapshot, its container, the node, the
host process table, the container's visible GPU UUIDs, the clock, the in-process store, `log`,
and `exit` to end the container).  They run on whichever thread drives the twin (the clock's
sleeper or the HTTP server thread for exec / proxy), so they must not block.

Twin annotations a pod may carry (all optional):
- `twin.stepgraph.dev/exit-after: "<seconds>"` + `twin.stepgraph.dev/exit-code: "<n>"` — the
  default workload ends after that much clock time (phase Succeeded for 0, Failed otherwise).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import shell
from .apiserver.streams import STDERR, STDOUT, ExecOutput, ExecProcess, ExecRequest

log = logging.getLogger(__name__)

ANNOTATION_PREFIX = "twin.stepgraph.dev/"
EXIT_AFTER = ANNOTATION_PREFIX + "exit-after"
EXIT_CODE = ANNOTATION_PREFIX + "exit-code"


@dataclass(frozen=True)
class ExecResult:
    """What an exec produced; exit 0 is success."""

    stdout: bytes = b""
    stderr: bytes = b""
    exit_code: int = 0


HttpResponse = tuple[int, str, bytes]  # (status, content type, body)


class StartFailure(Exception):
    """Raised by `Workload.start`: the runtime could not start the container.

    Without `exit_code` the container stays waiting with `reason` (as `CreateContainerConfigError`
    does); with one it is terminated at once (as `StartError`, exit 128) and restarted per policy.
    """

    def __init__(self, reason: str, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.reason, self.message, self.exit_code = reason, message, exit_code


class StoreAPI(Protocol):
    """The in-process view of the API server's store (no HTTP, no auth).

    `resource` is the plural, qualified by group for non-core kinds, as kubectl spells it:
    `"pods"`, `"configmaps"`, `"daemonsets.apps"`, `"dynamographdeployments.nvidia.com"`.
    Objects are plain dicts (copies: mutating them changes nothing), except that `copy=False`
    reads, and `record_event`, hand out the stored objects themselves, to be read and not changed
    (no copy: the store never changes a stored object in place).  Errors raise
    `stepgraph.twin.apiserver.errors.ApiError` with the HTTP code a client would see.
    """

    def get(self, resource: str, namespace: str | None, name: str, *, copy: bool = True) -> dict: ...

    def list(self, resource: str, namespace: str | None = None, *,
             label_selector: str | None = None, field_selector: str | None = None, copy: bool = True) -> list[dict]: ...

    def create(self, resource: str, namespace: str | None, body: dict) -> dict: ...

    def patch(self, resource: str, namespace: str | None, name: str, patch: Any, *,
              patch_type: str = "merge", subresource: str | None = None) -> dict: ...

    def delete(self, resource: str, namespace: str | None, name: str, *,
               grace_period_seconds: int | None = None) -> dict | None: ...

    def record_event(self, involved: dict, reason: str, message: str, *, type: str = "Normal",
                     component: str = "twin") -> dict: ...

    def subscribe(self, resource: str, fn: Callable[[str, dict], None]) -> Callable[[], None]:
        """Call `fn(event_type, obj)` after every ADDED/MODIFIED/DELETED; returns unsubscribe."""
        ...


@dataclass
class WorkloadContext:
    """Everything a running container may touch."""

    pod: dict                         # snapshot at start (use `store.get` for the current one)
    container: dict                   # this container's spec
    node: Any                         # twin.node.Node
    host: Any                         # twin.host.Host
    gpus: tuple[str, ...]             # GPU UUIDs this container sees, in NVML index order
    clock: Any                        # twin.clock VirtualClock / RealTimeClock
    store: StoreAPI
    log: Callable[[str], None]        # append one line to the container's log (served by /log)
    exit: Callable[[int], None]       # end the container with this exit code
    processes: list = field(default_factory=list)  # HostProcess objects the kubelet spawned
    set_ready: Callable[[bool], None] = lambda ready: None  # readiness, as a readiness probe reports it

    @property
    def namespace(self) -> str:
        return self.pod["metadata"]["namespace"]

    @property
    def pod_name(self) -> str:
        return self.pod["metadata"]["name"]

    @property
    def pod_uid(self) -> str:
        return self.pod["metadata"]["uid"]

    def env(self, name: str, default: str | None = None) -> str | None:
        for env in self.container.get("env") or []:
            if env.get("name") == name and "value" in env:
                return env["value"]
        return default


class Workload:
    """Base workload: runs until stopped; exec knows nothing (127); no HTTP.

    `ready_on_start = False` keeps the container not Ready (pod `Ready=False`) until the workload
    calls `ctx.set_ready(True)` — e.g. once a model has loaded.

    `stop(ctx, graceful=True)` is SIGTERM, sent when the pod is deleted. It returns how long the
    container takes to exit: None (or 0) means at once; a number of seconds, after that long;
    `math.inf`, when the workload itself calls `ctx.exit(code)` (a real process exiting). A
    container still running when the pod's grace period ends gets `stop(ctx, graceful=False)`
    (SIGKILL) and exits with 137; `graceful=False` is also a force delete (grace 0).
    """

    ready_on_start: bool = True

    def start(self, ctx: WorkloadContext) -> None:
        pass

    def stop(self, ctx: WorkloadContext, graceful: bool) -> float | None:
        return None

    def exec(self, ctx: WorkloadContext, argv: list[str], stdin: bytes | None) -> ExecResult:
        return not_found(argv)

    def http_get(self, ctx: WorkloadContext, port: int, path: str) -> HttpResponse | None:
        return None

    def exec_stream(self, ctx: WorkloadContext, request: ExecRequest, output: ExecOutput) -> ExecProcess:
        """An exec whose input and output flow while it runs (`kubectl exec -i`). By default the
        command is `exec` run once its input is complete, its output written when it returns."""
        return BufferedExec(lambda stdin: self.exec(ctx, list(request.argv), stdin), request, output)

    def listening_port(self, ctx: WorkloadContext, port: int) -> int | None:
        """The loopback port where this container's `port` accepts TCP connections (what
        port-forward dials), or None: a workload without a process listens nowhere."""
        return None


def not_found(argv: list[str]) -> ExecResult:
    """The container runtime's answer for a command that is not on $PATH."""
    cmd = argv[0] if argv else ""
    msg = f'exec: "{cmd}": executable file not found in $PATH\n'
    return ExecResult(stderr=msg.encode(), exit_code=127)


class DefaultWorkload(Workload):
    """Does nothing until stopped (or until `exit-after`); exec runs a few shell built-ins."""

    def start(self, ctx: WorkloadContext) -> None:
        annotations = ctx.pod["metadata"].get("annotations") or {}
        if EXIT_AFTER in annotations:
            code = int(annotations.get(EXIT_CODE, "0"))
            ctx.clock.call_later(float(annotations[EXIT_AFTER]), lambda: ctx.exit(code))

    def exec(self, ctx: WorkloadContext, argv: list[str], stdin: bytes | None) -> ExecResult:
        return run_builtin(ctx, argv, stdin)

    def exec_stream(self, ctx: WorkloadContext, request: ExecRequest, output: ExecOutput) -> ExecProcess:
        """`sh` reading its commands from stdin runs each line as it arrives; `cat` (alone, or as
        `sh -c cat`) copies input to output as it arrives; the rest run when their input is complete."""
        argv = list(request.argv)
        cmd = argv[0].rsplit("/", 1)[-1] if argv else ""
        if request.stdin and cmd in ("sh", "bash") and len(argv) == 1:
            return InteractiveShell(ctx, request, output)
        if request.stdin and (argv == ["cat"] or (cmd in ("sh", "bash") and argv[1:] == ["-c", "cat"])):
            return CopyInput(request, output)
        return super().exec_stream(ctx, request, output)


class BufferedExec:
    """A one-shot `run(stdin)` behind the streaming interface: it runs at once without input,
    when the input is closed, or — for a client that cannot close it (v4) — on the first input."""

    def __init__(self, run: Callable[[bytes | None], ExecResult], request: ExecRequest, output: ExecOutput) -> None:
        self._run, self._request, self._output = run, request, output
        self._stdin = b""
        self._lock = threading.Lock()
        self._done = False
        if not request.stdin:
            self._finish()

    def write_stdin(self, data: bytes) -> None:
        with self._lock:
            self._stdin += data
        if not self._request.stdin_closes:
            self._finish()

    def close_stdin(self) -> None:
        self._finish()

    def resize(self, width: int, height: int) -> None:
        pass  # no terminal to resize

    def kill(self) -> None:
        with self._lock:
            self._done = True

    def _finish(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            stdin = self._stdin if self._request.stdin else None
        try:
            result = self._run(stdin)
        except Exception:  # a broken workload is an exec failure, not a server crash
            log.exception("workload exec %r failed", list(self._request.argv))
            result = ExecResult(stderr=b"exec failed: internal error in twin workload\n", exit_code=1)
        _emit(self._output, self._request, result.stdout, result.stderr)
        self._output.exited(result.exit_code)


def _emit(output: ExecOutput, request: ExecRequest, out: bytes, err: bytes) -> None:
    """A terminal has one output: stderr goes where stdout does."""
    if out:
        output.write(STDOUT, out)
    if err:
        output.write(STDOUT if request.tty else STDERR, err)


class InteractiveShell:
    """The built-in shell reading commands from stdin: each complete line runs when it arrives
    (`exit` ends it); end of input runs what is left and ends with the last status. No prompt,
    no echo and no line editing, even with a terminal."""

    def __init__(self, ctx: WorkloadContext, request: ExecRequest, output: ExecOutput) -> None:
        self._ctx, self._request, self._output = ctx, request, output
        self._pending = b""
        self._status = 0
        self._lock = threading.Lock()
        self._done = False

    def _line(self, line: bytes) -> bool:
        def one(command: list[str]) -> tuple[bytes, bytes, int]:
            result = run_builtin(self._ctx, command, None)
            return result.stdout, result.stderr, result.exit_code
        out, err, self._status, ended = shell.run_lines(line.decode(errors="replace"), one, self._status)
        _emit(self._output, self._request, out, err)
        return ended

    def write_stdin(self, data: bytes) -> None:
        with self._lock:
            self._pending += data
            while not self._done and b"\n" in self._pending:
                line, self._pending = self._pending.split(b"\n", 1)
                if self._line(line):
                    self._end()

    def close_stdin(self) -> None:
        with self._lock:
            if not self._done:
                if self._pending.strip():
                    self._line(self._pending)
                self._end()

    def _end(self) -> None:
        self._done = True
        self._output.exited(self._status)

    def resize(self, width: int, height: int) -> None:
        pass  # nothing here draws on a terminal

    def kill(self) -> None:
        with self._lock:
            self._done = True


class CopyInput:
    """`cat` of stdin: what arrives is written out at once; end of input ends it with 0."""

    def __init__(self, request: ExecRequest, output: ExecOutput) -> None:
        self._output = output
        self._lock = threading.Lock()
        self._done = False

    def write_stdin(self, data: bytes) -> None:
        with self._lock:
            if not self._done:
                self._output.write(STDOUT, data)

    def close_stdin(self) -> None:
        with self._lock:
            if not self._done:
                self._done = True
                self._output.exited(0)

    def resize(self, width: int, height: int) -> None:
        pass

    def kill(self) -> None:
        with self._lock:
            self._done = True


def run_builtin(ctx: WorkloadContext, argv: list[str], stdin: bytes | None) -> ExecResult:
    """`echo`, `true`, `false`, `cat` (stdin, /etc/hostname, /proc/<pid>/cgroup — host PIDs only
    with `hostPID: true`), `env`, `hostname`, `sleep` (returns at once: hooks must not block),
    `ls` of the two folders the shell knows, and `sh -c SCRIPT` of these joined by `;`, `&&`,
    `||` with `exit [N]` (`shell.py`); anything else → 127."""
    if not argv:
        return not_found(argv)
    cmd, args = argv[0].rsplit("/", 1)[-1], argv[1:]
    if cmd in ("sh", "bash") and len(args) >= 2 and args[0] == "-c":
        def one(command: list[str]) -> tuple[bytes, bytes, int]:
            result = run_builtin(ctx, command, stdin)
            return result.stdout, result.stderr, result.exit_code
        out, err, code = shell.run(args[1], one)
        return ExecResult(stdout=out, stderr=err, exit_code=code)
    if cmd == "sleep":
        if len(args) != 1 or not _is_duration(args[0]):
            return ExecResult(stderr=f"sleep: invalid number '{' '.join(args)}'\n".encode(), exit_code=1)
        return ExecResult()
    if cmd == "ls":
        return _ls(args)
    if cmd == "echo":
        return ExecResult(stdout=(" ".join(args) + "\n").encode())
    if cmd == "true":
        return ExecResult()
    if cmd == "false":
        return ExecResult(exit_code=1)
    if cmd == "hostname":
        return ExecResult(stdout=(ctx.pod_name + "\n").encode())
    if cmd == "env":
        lines = [f"{e['name']}={e.get('value', '')}" for e in ctx.container.get("env") or []]
        lines.append(f"HOSTNAME={ctx.pod_name}")
        return ExecResult(stdout=("\n".join(lines) + "\n").encode())
    if cmd == "cat":
        return _cat(ctx, args, stdin)
    return not_found(argv)


def _cat(ctx: WorkloadContext, paths: list[str], stdin: bytes | None) -> ExecResult:
    if not paths:
        return ExecResult(stdout=stdin or b"")
    out, err, code = b"", b"", 0
    for path in paths:
        parts = path.strip("/").split("/")
        if path == "/etc/hostname":
            out += (ctx.pod_name + "\n").encode()
        elif len(parts) == 3 and parts[0] == "proc" and parts[2] == "cgroup" and parts[1].isdigit():
            try:
                if not _sees_pid(ctx, int(parts[1])):
                    raise ProcessLookupError(parts[1])
                out += ctx.host.cgroup(int(parts[1])).encode()
            except ProcessLookupError:
                err, code = err + f"cat: {path}: No such file or directory\n".encode(), 1
        else:
            err, code = err + f"cat: {path}: No such file or directory\n".encode(), 1
    return ExecResult(stdout=out, stderr=err, exit_code=code)


def _is_duration(text: str) -> bool:
    try:
        return float(text.rstrip("smhd")) >= 0
    except ValueError:
        return False


# The folders the built-in shell can read from (see `_cat`), as `ls` lists them.
_FOLDERS = {"/": "etc\nproc\n", "/etc": "hostname\n"}


def _ls(paths: list[str]) -> ExecResult:
    out, err, code = b"", b"", 0
    for path in paths or ["/"]:
        listing = _FOLDERS.get(path.rstrip("/") or "/")
        if listing is None:
            err, code = err + f"ls: {path}: No such file or directory\n".encode(), 1
        else:
            out += (f"{path}:\n{listing}" if len(paths) > 1 else listing).encode()
    return ExecResult(stdout=out, stderr=err, exit_code=code)


def _sees_pid(ctx: WorkloadContext, pid: int) -> bool:
    """A container sees host PIDs only with `hostPID: true`; otherwise just its own pod's."""
    if (ctx.pod.get("spec") or {}).get("hostPID"):
        return True
    return ctx.host.process(pid).pod_uid == ctx.pod_uid


Matcher = Callable[[dict, dict], bool]          # (pod, container) → does this workload run it?
Factory = Callable[[dict, dict], Workload]      # (pod, container) → a fresh Workload


@dataclass(frozen=True)
class Registration:
    name: str
    matcher: Matcher
    factory: Factory


class WorkloadRegistry:
    """Ordered (matcher, factory) pairs; the first matcher that accepts wins."""

    def __init__(self) -> None:
        self._entries: list[Registration] = []

    def register(self, name: str, matcher: Matcher, factory: Factory, *, before: str | None = None) -> None:
        """Append (or insert before the entry called `before`); names are unique."""
        if any(e.name == name for e in self._entries):
            raise ValueError(f"workload {name!r} is already registered")
        entry = Registration(name, matcher, factory)
        if before is None:
            self._entries.append(entry)
            return
        for i, e in enumerate(self._entries):
            if e.name == before:
                self._entries.insert(i, entry)
                return
        raise KeyError(f"no workload called {before!r} to insert before")

    def names(self) -> list[str]:
        return [e.name for e in self._entries]

    def create(self, pod: dict, container: dict) -> Workload:
        for entry in self._entries:
            if entry.matcher(pod, container):
                return entry.factory(pod, container)
        return DefaultWorkload()
