"""A probe command exec'd into a twin pod → (stdout, stderr, exit code), run in-process.

The live target runs small probe commands inside the agent and hostengine pods: `python -c
'<script>'` that reads pynvml or `http://127.0.0.1:9100/metrics`, and `dcgmi …`. Here the same
command runs against the twin's models: the script gets a `pynvml` bound to its container's NVML
view, an `urllib.request.urlopen` that reaches the pod's own ports, `os.environ` of the container
and a `sys` whose stdout/stderr are this call's buffers — the global `sys.stdout` is never
touched (the twin's other threads print too). `sys.exit(n)` → exit n; an uncaught exception →
traceback on stderr, exit 1; an unknown program → 127, as a container runtime answers.

Only a whitelist of modules can be imported; a script cannot reach the real host (no real `os`,
`subprocess`, `socket`). A script that never ends would hang the twin: probes are trusted test
code, not user input.
"""

from __future__ import annotations

import builtins
import io
import json
import posixpath
import traceback
import types
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from typing import Any
from urllib.parse import urlsplit

from .workloads import ExecResult, HttpResponse, WorkloadContext, not_found, run_builtin

SAFE_MODULES = frozenset(
    {"json", "re", "math", "collections", "itertools", "functools", "string", "textwrap", "base64",
     "statistics", "typing", "dataclasses", "datetime", "struct", "traceback", "__future__", "kubernetes"}
)
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


@dataclass
class ProbeContext:
    """What a probe in one container can reach."""

    env: dict[str, str]
    nvml: Callable[[], types.ModuleType] | None = None  # fresh `pynvml` for this container
    http_get: Callable[[int, str], HttpResponse | None] | None = None  # the pod's own ports
    dcgmi: Callable[[list[str]], tuple[str, str, int]] | None = None  # set in the hostengine pod
    fallback: WorkloadContext | None = None  # for echo/cat/env/sh -c built-ins
    mangle_json: Callable[[], bool] = lambda: False  # the `exec_preload_mangles_json` switch (Finding #11)


def run_probe(argv: list[str], stdin: bytes | None, probe: ProbeContext) -> ExecResult:
    result = _run(argv, stdin, probe)
    return _mangled(result) if probe.mangle_json() else result


def _mangled(result: ExecResult) -> ExecResult:
    """What kubernetes-client >= 35 with `_preload_content=True` handed back: `str(json.loads(stdout))`."""
    try:
        parsed = json.loads(result.stdout)
    except ValueError:
        return result
    if not isinstance(parsed, (dict, list)):
        return result
    return ExecResult(str(parsed).encode(), result.stderr, result.exit_code)


def _run(argv: list[str], stdin: bytes | None, probe: ProbeContext) -> ExecResult:
    if not argv:
        return not_found(argv)
    program = argv[0].rsplit("/", 1)[-1]
    if program.startswith("python"):
        return _run_python(argv[1:], stdin, probe)
    if program == "dcgmi" and probe.dcgmi is not None:
        out, err, code = probe.dcgmi(argv[1:])
        return ExecResult(out.encode(), err.encode(), code)
    if probe.fallback is not None:
        return run_builtin(probe.fallback, argv, stdin)
    return not_found(argv)


_PYTHON_FLAGS = {"-u", "-B", "-E", "-I", "-s", "-S", "-O", "-OO", "-q", "-b", "-bb", "-d", "-v"}


def _run_python(args: list[str], stdin: bytes | None, probe: ProbeContext) -> ExecResult:
    while args and args[0] in _PYTHON_FLAGS:  # -u (unbuffered) and friends change nothing here
        args = args[1:]
    if args[:1] == ["-c"] and len(args) >= 2:
        return run_script(args[1], ["-c", *args[2:]], probe)
    if (not args or args[0] == "-") and stdin:
        return run_script(stdin.decode(), ["-", *args[1:]], probe)
    if args[:1] == ["-m"] and len(args) >= 2:
        return ExecResult(stderr=f"/usr/local/bin/python: No module named {args[1]}\n".encode(), exit_code=1)
    if args and not args[0].startswith("-"):
        msg = f"python: can't open file '{args[0]}': [Errno 2] No such file or directory\n"
        return ExecResult(stderr=msg.encode(), exit_code=2)
    return ExecResult(stderr=b"python: interactive mode needs a terminal in this container\n", exit_code=1)


# The steps exec the same few probe scripts hundreds of times a run; compiling one costs 50-350 µs.
# A code object is immutable and each run gets fresh globals, so the compiled form is shared.
_COMPILED: dict[str, types.CodeType] = {}
_COMPILED_MAX = 256


def run_script(source: str, argv: list[str], probe: ProbeContext) -> ExecResult:
    """Run one Python script against the probe context; never raises."""
    out, err = io.StringIO(), io.StringIO()
    sandbox = _Sandbox(probe, out, err, argv)
    code = 0
    try:
        code_object = _COMPILED.get(source)
        if code_object is None:  # compiled here, not in a helper: a SyntaxError's traceback stays as it was
            code_object = compile(source, "<string>", "exec")
            if len(_COMPILED) >= _COMPILED_MAX:
                _COMPILED.clear()
            _COMPILED[source] = code_object
        exec(code_object, {"__name__": "__main__", "__builtins__": sandbox.builtins})
    except SystemExit as stop:
        code = _exit_code(stop.code, err)
    except BaseException as exc:
        frames = traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)
        err.write("".join(frames))
        code = 1
    return ExecResult(out.getvalue().encode(), err.getvalue().encode(), code)


def _exit_code(code: Any, err: io.StringIO) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    err.write(f"{code}\n")
    return 1


class _Sandbox:
    """Builtins and import hook for one script run."""

    def __init__(self, probe: ProbeContext, out: io.StringIO, err: io.StringIO, argv: list[str]) -> None:
        self.probe, self.out, self.err = probe, out, err
        self.modules: dict[str, types.ModuleType] = {
            "sys": self._sys(argv),
            "os": self._os(),
            "time": self._time(),
            "urllib": self._urllib(),
        }
        self.builtins = dict(vars(builtins))
        self.builtins.update(__import__=self._import, print=self._print, exit=self._exit, quit=self._exit,
                             open=self._open, input=self._no_input)

    def _print(self, *values: object, sep: str | None = " ", end: str | None = "\n", file: Any = None, flush: bool = False) -> None:
        (file or self.out).write((sep if sep is not None else " ").join(map(str, values)) + (end if end is not None else "\n"))

    @staticmethod
    def _exit(code: object = None) -> None:
        raise SystemExit(code)

    @staticmethod
    def _open(path: str, *args: object, **kwargs: object) -> None:
        raise FileNotFoundError(2, "No such file or directory", path)

    @staticmethod
    def _no_input(*args: object) -> str:
        raise EOFError("EOF when reading a line")

    def _import(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> types.ModuleType:
        top = name.split(".")[0]
        if level == 0 and name == "pynvml" and self.probe.nvml is not None:
            if "pynvml" not in self.modules:
                self.modules["pynvml"] = self.probe.nvml()
            return self.modules["pynvml"]
        if level == 0 and top in self.modules:
            if name == "urllib.request" and fromlist:
                return self.modules["urllib"].request  # type: ignore[attr-defined]
            if name == "urllib.error" and fromlist:
                return urllib.error  # type: ignore[return-value]
            return self.modules[top]
        if level == 0 and top in SAFE_MODULES:
            return builtins.__import__(name, globals, locals, fromlist, level)
        raise ModuleNotFoundError(f"No module named '{name}'", name=name)

    def _sys(self, argv: list[str]) -> types.ModuleType:
        sys_mod = types.ModuleType("sys")
        sys_mod.stdout, sys_mod.stderr = self.out, self.err  # type: ignore[attr-defined]
        sys_mod.stdin = io.StringIO()  # type: ignore[attr-defined]
        sys_mod.argv = list(argv)  # type: ignore[attr-defined]
        sys_mod.exit = self._exit  # type: ignore[attr-defined]
        sys_mod.version_info = (3, 11, 9, "final", 0)  # type: ignore[attr-defined]
        sys_mod.version = "3.11.9 (main) [GCC 12.2.0]"  # type: ignore[attr-defined]
        sys_mod.platform = "linux"  # type: ignore[attr-defined]
        sys_mod.maxsize = 2**63 - 1  # type: ignore[attr-defined]
        return sys_mod

    def _os(self) -> types.ModuleType:
        env = dict(self.probe.env)
        os_mod = types.ModuleType("os")
        os_mod.environ = env  # type: ignore[attr-defined]
        os_mod.getenv = lambda key, default=None: env.get(key, default)  # type: ignore[attr-defined]
        os_mod.path = posixpath  # type: ignore[attr-defined]
        os_mod.sep, os_mod.linesep = "/", "\n"  # type: ignore[attr-defined]
        os_mod.getpid = lambda: 1  # type: ignore[attr-defined]
        return os_mod

    @staticmethod
    def _time() -> types.ModuleType:
        import time as real_time

        time_mod = types.ModuleType("time")
        for name in ("time", "monotonic", "perf_counter", "strftime", "gmtime", "localtime"):
            setattr(time_mod, name, getattr(real_time, name))
        time_mod.sleep = lambda seconds: None  # type: ignore[attr-defined]  # probes must not stall the twin
        return time_mod

    def _urllib(self) -> types.ModuleType:
        request = types.ModuleType("urllib.request")
        request.urlopen = self._urlopen  # type: ignore[attr-defined]
        request.Request = _Request  # type: ignore[attr-defined]
        package = types.ModuleType("urllib")
        package.request, package.error = request, urllib.error  # type: ignore[attr-defined]
        return package

    def _urlopen(self, url: str | _Request, data: object = None, timeout: float | None = None, **kwargs: object) -> _Response:
        target = url.full_url if isinstance(url, _Request) else url
        parts = urlsplit(target)
        if parts.scheme != "http" or (parts.hostname or "") not in _LOOPBACK:
            raise urllib.error.URLError(OSError(-3, "Temporary failure in name resolution"))
        port = parts.port or 80
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        answer = self.probe.http_get(port, path) if self.probe.http_get else None
        if answer is None:
            raise urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
        status, content_type, body = answer
        headers = Message()
        headers["Content-Type"] = content_type
        if status >= 400:
            raise urllib.error.HTTPError(target, status, "error", headers, io.BytesIO(body))
        return _Response(body, status, headers, target)


class _Request:
    def __init__(self, url: str, data: object = None, headers: dict | None = None, method: str | None = None) -> None:
        self.full_url = url
        self.headers = headers or {}


class _Response(io.BytesIO):
    """What `urlopen` returns: file-like, context manager, `.status`, `.getcode()`, `.headers`."""

    def __init__(self, body: bytes, status: int, headers: Message, url: str) -> None:
        super().__init__(body)
        self.status = self.code = status
        self.headers = headers
        self.url = url

    def getcode(self) -> int:
        return self.status

    def geturl(self) -> str:
        return self.url

    def info(self) -> Message:
        return self.headers
