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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import shell

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
    Objects are plain dicts (copies: mutating them changes nothing).  Errors raise
    `stepgraph.twin.apiserver.errors.ApiError` with the HTTP code a client would see.
    """

    def get(self, resource: str, namespace: str | None, name: str) -> dict: ...

    def list(self, resource: str, namespace: str | None = None, *,
             label_selector: str | None = None, field_selector: str | None = None) -> list[dict]: ...

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
