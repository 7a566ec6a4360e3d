"""The node as a twin process container's Python program sees it, installed at interpreter start.

- **Time.** With `STEPGRAPH_TIME_STATE` / `STEPGRAPH_TIME_RATE` set (a scaled twin clock), the
  program's `time.time/monotonic/perf_counter/clock_gettime` read the twin's clock from the state
  it shares (a piecewise linear function of the machine's CLOCK_MONOTONIC, so both sides agree
  exactly), and `time.sleep` and threading waits (`Condition.wait`, so `Event.wait`, `Timer`,
  `queue` gets, `Thread.join`) last until the twin's clock has moved as far as asked.  The hook
  tells the twin when the program's threads begin and end a wait: the clock leaps only while
  every program waits.
- **Files.** With `STEPGRAPH_VIEW_CONFIG` set: absolute paths under a mount (hostPath, emptyDir,
  the service-account folder, the program's folder) go to their folder on this machine;
  `/proc/<pid>/cgroup` of a twin host PID is the twin's text (another pod's PID without
  `hostPID` does not exist); other paths read the machine's files, and writes to them land in the
  container's own layer (a folder that goes with the container), never on the machine.

Patched entry points: builtins.open/io.open, os.open/stat/lstat/access/listdir/scandir/mkdir/
rmdir/remove/unlink/rename/replace/chmod/utime/readlink, ssl.SSLContext.load_verify_locations/
load_cert_chain.  Code that opens files in C (extension modules) or through `posix` directly is
not redirected; asyncio timers and socket timeouts are not scaled.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import posixpath
import stat as stat_module
import sys
import time

from _stepgraph_bridge import BRIDGE, BridgeGone

CONFIG_ENV = "STEPGRAPH_VIEW_CONFIG"
RATE_ENV = "STEPGRAPH_TIME_RATE"
STATE_ENV = "STEPGRAPH_TIME_STATE"
_EXIT_CANNOT_SET_UP = 70  # EX_SOFTWARE: the container fails to start, with the reason in its log


def install() -> None:
    try:
        if os.environ.get(STATE_ENV):
            install_time(os.environ[STATE_ENV], float(os.environ.get(RATE_ENV, "")))
        if os.environ.get(CONFIG_ENV):
            with open(os.environ[CONFIG_ENV], encoding="utf-8") as f:
                install_files(json.load(f))
    except Exception as err:  # a program must never run against the real machine by mistake
        sys.stderr.write(f"stepgraph twin: cannot give this program the node's view: {err}\n")
        sys.stderr.flush()
        os._exit(_EXIT_CANNOT_SET_UP)


# -- time ---------------------------------------------------------------------------------------
_RECHECK_S = 0.01  # while the twin runs at real time, a wait looks this often whether it leapt


def install_time(state_path: str, rate: float) -> None:
    import mmap
    import struct
    import threading

    if not rate > 0:
        raise ValueError(f"{RATE_ENV} must be > 0, got {rate}")
    with open(state_path, "rb") as f:
        shared = mmap.mmap(f.fileno(), 48, prot=mmap.PROT_READ)
    real_monotonic, real_sleep = time.monotonic, time.sleep
    unpack = struct.Struct("<Q5d").unpack_from
    inf = float("inf")

    def piece() -> tuple[float, float, float, float, float]:
        """The twin's current piece of time (start, its now() there, rate, until, epoch), read whole."""
        while True:
            seq, *fields = unpack(shared, 0)
            if not seq & 1 and unpack(shared, 0)[0] == seq:
                return tuple(fields)  # type: ignore[return-value]
            real_sleep(0)  # the twin is rewriting it: a few instructions

    def on_piece(at: float, start: float, base: float, r: float, until: float) -> float:
        # the twin's piece_now (twin/clock.py): `r` from `base` up to `until`, then real time
        leapt = base + max(0.0, at - start) * r
        return leapt if leapt <= until else until + (at - start - (until - base) / r)

    def monotonic() -> float:
        at = real_monotonic()
        return on_piece(at, *piece()[:4])

    def wall() -> float:
        at = real_monotonic()
        p = piece()
        return p[4] + on_piece(at, *p[:4])

    def wall_wait(deadline: float) -> float:
        """Machine seconds to wait for the twin's clock to reach `deadline`. Exact while it leaps up
        to at least there (a change can then only slow it: the wait ends early and looks again);
        otherwise it may leap any moment (another program begins to wait), so look again soon."""
        at = real_monotonic()
        start, base, r, until, _ = piece()
        if until == inf and r == 1.0:
            return min(deadline - on_piece(at, start, base, r, until), _RECHECK_S)
        if deadline <= until:
            return max(0.0, start + (deadline - base) / r - at)
        return min(max(0.0, start + (until - base) / r - at) + (deadline - until), _RECHECK_S)

    announced: list[bool] = []
    starting_thread = threading.local()
    held = set()  # threads of this program out of a wait (only those that ever waited count)
    held_lock = threading.RLock()  # a signal handler that sleeps may run while its thread holds it

    def report(running: bool, wakes: float | None = None) -> None:
        try:
            BRIDGE.call("run", "1" if running else "0", *([repr(wakes)] if wakes is not None else []))
        except BridgeGone:
            pass  # no twin to tell: nothing keeps time for it

    def up() -> None:
        # The program's first wait ends its start-up (the twin holds its clock at real time and the
        # container not Ready until then). The wait inside Thread.start (for the new thread to run)
        # is start-up, not the program waiting.
        if not announced:
            announced.append(True)
            try:
                BRIDGE.call("up")
            except BridgeGone:
                pass  # no twin to tell: nothing waits for it

    waking: dict[int, float] = {}  # waiting thread → the twin time its wait ends (the twin must not leap past it)

    def waiting(deadline: float | None = None) -> bool:
        """This thread begins a wait (until twin time `deadline`; None: until woken); False for
        Thread.start's own (not the program waiting)."""
        if getattr(starting_thread, "on", False):
            return False
        up()
        with held_lock:
            me = threading.get_ident()
            if deadline is not None:
                waking[me] = deadline
            if me in held or deadline is not None:
                held.discard(me)
                if not held:
                    report(False, min(waking.values(), default=None))
        return True

    def resumed() -> None:
        with held_lock:
            me = threading.get_ident()
            waking.pop(me, None)
            if not held:
                report(True)
            held.add(me)

    def sleep(seconds: float) -> None:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        deadline = monotonic() + seconds
        counted = waiting(deadline)
        try:
            while deadline - monotonic() > 0:
                real_sleep(wall_wait(deadline))
        finally:
            if counted:
                resumed()

    real_clock_gettime = time.clock_gettime
    scaled = {time.CLOCK_REALTIME: wall, time.CLOCK_MONOTONIC: monotonic, time.CLOCK_BOOTTIME: monotonic,
              getattr(time, "CLOCK_MONOTONIC_RAW", -1): monotonic}

    def clock_gettime(clk_id: int) -> float:
        return scaled[clk_id]() if clk_id in scaled else real_clock_gettime(clk_id)

    def now_or(secs: float | None) -> float:
        return wall() if secs is None else secs

    # Replacing the stdlib's clocks is the point here, so the checker's objections are silenced
    # line by line: the stubs type seconds as float | SupportsIndex, the programs we run pass floats.
    real_localtime, real_gmtime, real_ctime, real_strftime = time.localtime, time.gmtime, time.ctime, time.strftime
    time.time, time.monotonic, time.perf_counter, time.sleep = wall, monotonic, monotonic, sleep  # type: ignore[assignment]
    time.time_ns = lambda: int(wall() * 1e9)
    time.monotonic_ns = time.perf_counter_ns = lambda: int(monotonic() * 1e9)
    time.clock_gettime = clock_gettime
    time.clock_gettime_ns = lambda clk_id: int(clock_gettime(clk_id) * 1e9)
    time.localtime = lambda secs=None: real_localtime(now_or(secs))  # type: ignore[arg-type]
    time.gmtime = lambda secs=None: real_gmtime(now_or(secs))  # type: ignore[arg-type]
    time.ctime = lambda secs=None: real_ctime(now_or(secs))  # type: ignore[arg-type]
    time.strftime = lambda fmt, t=None: real_strftime(fmt, real_localtime(wall()) if t is None else t)

    real_wait, real_join = threading.Condition.wait, threading.Thread.join

    def wait(self, timeout=None):
        deadline = None if timeout is None else monotonic() + timeout
        counted = waiting(deadline)
        try:
            if deadline is None:
                return real_wait(self, None)
            while deadline - monotonic() > 0:
                # between two real waits this thread holds the lock: no notify can be missed
                if real_wait(self, wall_wait(deadline)):
                    return True
            return False
        finally:
            if counted:
                resumed()

    def join(self, timeout=None):
        deadline = None if timeout is None else monotonic() + timeout
        counted = waiting(deadline)
        try:
            if deadline is None:
                return real_join(self, None)
            while self.is_alive() and deadline - monotonic() > 0:
                real_join(self, wall_wait(deadline))
            return None
        finally:
            if counted:
                resumed()

    real_shutdown = threading._shutdown  # type: ignore[attr-defined]

    def shutdown():
        # The interpreter's exit waits for the program's other threads (a Timer, a worker) in C;
        # the main thread's code is over, so it must not hold the twin's clock at real time.
        waiting()
        return real_shutdown()

    real_thread_start, real_bootstrap = threading.Thread.start, threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def thread_start(self):
        starting_thread.on = True
        try:
            return real_thread_start(self)
        finally:
            starting_thread.on = False

    def bootstrap_inner(self):
        try:
            real_bootstrap(self)
        finally:  # a thread that ends no longer runs (and must not hold the twin's clock)
            with held_lock:
                me = threading.get_ident()
                waking.pop(me, None)
                if me in held:
                    held.discard(me)
                    if not held:
                        report(False, min(waking.values(), default=None))

    threading.Condition.wait = wait  # type: ignore[method-assign]
    threading.Thread.join = join  # type: ignore[method-assign]
    threading.Thread.start = thread_start  # type: ignore[method-assign]
    threading.Thread._bootstrap_inner = bootstrap_inner  # type: ignore[attr-defined]
    threading._shutdown = shutdown  # type: ignore[attr-defined]
    threading._time = monotonic  # type: ignore[attr-defined]  # Condition.wait_for and Semaphore deadlines

    # A signal handler that sets an Event (the agents' SIGTERM handler) runs in the main thread,
    # and deadlocks if that thread is inside Event.wait holding the Event's non-reentrant lock.
    # Scaled waits cycle `rate` times as often, so that rare window would open `rate` times as
    # often: Events get a reentrant lock, and the handler's set() goes through.
    real_event_init = threading.Event.__init__

    def event_init(self):
        real_event_init(self)
        self._cond = threading.Condition(threading.RLock())

    threading.Event.__init__ = event_init  # type: ignore[method-assign]


# -- files --------------------------------------------------------------------------------------
class _Virtual:
    """A file the twin answers (a cgroup text), opened read-only through a memfd."""

    def __init__(self, text: str, path: str) -> None:
        self.data = text.encode()
        self.path = path

    def fd(self) -> int:
        fd = os.memfd_create("twin-view", os.MFD_CLOEXEC)
        os.write(fd, self.data)
        os.lseek(fd, 0, os.SEEK_SET)
        return fd

    def stat(self) -> os.stat_result:
        return os.stat_result((stat_module.S_IFREG | 0o444, 0, 0, 1, 0, 0, 0, 0, 0, 0))  # /proc sizes read as 0


class _Paths:
    def __init__(self, config: dict, real: dict) -> None:
        self.mounts = sorted(((c.rstrip("/") or "/", h, bool(ro)) for c, h, ro in config["mounts"]),
                             key=lambda m: -len(m[0]))
        self.proc_roots = [r.rstrip("/") for r in config["proc_roots"]]
        self.own = config["own_folder"].rstrip("/")
        self.rootfs = config["rootfs"].rstrip("/")
        self.real = real

    def map(self, path, write: bool = False):
        """The machine's path (same type as `path`) or a `_Virtual` for a container path."""
        if isinstance(path, int):
            return path
        raw = os.fspath(path)
        text = os.fsdecode(raw)
        if not text.startswith("/"):
            return raw
        norm = posixpath.normpath(text)
        back = (lambda p: os.fsencode(p)) if isinstance(raw, bytes) else (lambda p: p)
        for root in self.proc_roots:
            if norm == root or norm.startswith(root + "/"):
                rest = norm[len(root):]
                parts = rest.split("/")
                if len(parts) == 3 and parts[1].isdigit() and parts[2] == "cgroup":
                    code, fields = _cgroup(int(parts[1]))
                    if code == 0:
                        if write:
                            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), text)
                        return _Virtual(json.loads(fields[0]), text)
                    if code == 2:
                        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), text)
                return back("/proc" + rest)
        for container, host, read_only in self.mounts:
            if norm == container or norm.startswith(container + "/") or container == "/":
                if write and read_only:
                    raise OSError(errno.EROFS, os.strerror(errno.EROFS), text)
                return back(host + norm[len(container.rstrip("/")):])
        if norm == self.own or norm.startswith((self.own + "/", "/dev/")) or norm == "/dev":
            return raw
        layer = self.rootfs + norm
        if write:
            self.real["makedirs"](posixpath.dirname(layer), exist_ok=True)
            return back(layer)
        return back(layer) if self.real["lexists"](layer) else raw

    def copy_up(self, path, mapped) -> None:
        """Before a container changes a machine file in place, give it its own copy (the layer)."""
        if isinstance(mapped, (str, bytes)) and os.fsdecode(mapped).startswith(self.rootfs + "/"):
            original = os.fsdecode(mapped)[len(self.rootfs):]
            if not self.real["lexists"](os.fsdecode(mapped)) and self.real["lexists"](original):
                import shutil  # rarely needed: not at every interpreter start

                shutil.copy2(original, os.fsdecode(mapped))


def _cgroup(pid: int) -> tuple[int, list[str]]:
    try:
        return BRIDGE.call("cgroup", str(pid))
    except BridgeGone:
        return 1, []  # no twin to ask: the machine's own /proc answers


def _writes(mode: str) -> bool:
    return any(c in mode for c in "wax+")


def _open_writes(flags: int) -> bool:
    return bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))


def install_files(config: dict) -> None:
    real = {"open": builtins.open, "os_open": os.open, "stat": os.stat, "lstat": os.lstat,
            "makedirs": os.makedirs, "lexists": os.path.lexists}
    paths = _Paths(config, real)

    def open_(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True, opener=None):
        mapped = paths.map(file, _writes(mode))
        if isinstance(mapped, _Virtual):
            return real["open"](mapped.fd(), mode, buffering, encoding, errors, newline, True, None)
        if "a" in mode or "+" in mode:
            paths.copy_up(file, mapped)
        return real["open"](mapped, mode, buffering, encoding, errors, newline, closefd, opener)

    def os_open(path, flags, mode=0o777, *, dir_fd=None):
        if dir_fd is not None:
            return real["os_open"](path, flags, mode, dir_fd=dir_fd)
        mapped = paths.map(path, _open_writes(flags))
        if isinstance(mapped, _Virtual):
            return mapped.fd()
        if flags & (os.O_APPEND | os.O_RDWR) and not flags & os.O_TRUNC:
            paths.copy_up(path, mapped)
        return real["os_open"](mapped, flags, mode)

    def reading(name: str, *, virtual=None):
        original = getattr(os, name)

        def call(path, *args, **kwargs):
            if kwargs.get("dir_fd") is not None:
                return original(path, *args, **kwargs)
            mapped = paths.map(path)
            if isinstance(mapped, _Virtual):
                if virtual is None:
                    raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), mapped.path)
                return virtual(mapped)
            return original(mapped, *args, **kwargs)

        call.__name__ = name
        setattr(os, name, call)

    def writing(name: str, paths_taken: int = 1):
        original = getattr(os, name)

        def call(*args, **kwargs):
            if kwargs.get("dir_fd") is not None or kwargs.get("src_dir_fd") is not None:
                return original(*args, **kwargs)
            mapped = [paths.map(a, write=True) for a in args[:paths_taken]]
            if any(isinstance(m, _Virtual) for m in mapped):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(args[0]))
            return original(*mapped, *args[paths_taken:], **kwargs)

        call.__name__ = name
        setattr(os, name, call)

    builtins.open = io.open = open_
    os.open = os_open
    reading("stat", virtual=_Virtual.stat)
    reading("lstat", virtual=_Virtual.stat)
    reading("access", virtual=lambda v, *a, **k: True)
    reading("listdir")
    reading("scandir")
    reading("readlink")
    for name in ("mkdir", "rmdir", "remove", "unlink", "chmod", "utime", "truncate"):
        writing(name)
    writing("rename", 2)
    writing("replace", 2)
    _install_ssl(paths)


class _WhenImported:
    """Run `patch(module)` once the program imports `name` (importing it here would cost every
    interpreter start, probes included, the module's load time)."""

    def __init__(self, name: str, patch) -> None:
        self.name, self.patch = name, patch

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = next((s for f in sys.meta_path if hasattr(f, "find_spec") and (s := f.find_spec(name, path, target))),
                    None)
        if spec is None or spec.loader is None:
            return spec
        inner, patch = spec.loader, self.patch

        class Loader:
            def create_module(self, spec):
                return inner.create_module(spec)

            def exec_module(self, module):
                inner.exec_module(module)
                patch(module)

        spec.loader = Loader()
        return spec


def _install_ssl(paths: _Paths) -> None:
    if "ssl" in sys.modules:
        _patch_ssl(sys.modules["ssl"], paths)
    else:
        sys.meta_path.insert(0, _WhenImported("ssl", lambda module: _patch_ssl(module, paths)))


def _patch_ssl(ssl, paths: _Paths) -> None:
    """OpenSSL opens CA and certificate files itself: hand it the mapped path (or the data)."""
    real_verify, real_chain = ssl.SSLContext.load_verify_locations, ssl.SSLContext.load_cert_chain

    def load_verify_locations(self, cafile=None, capath=None, cadata=None):
        mapped = paths.map(cafile) if cafile is not None else None
        if isinstance(mapped, _Virtual):
            return real_verify(self, None, capath, mapped.data.decode())
        return real_verify(self, mapped, paths.map(capath) if capath is not None else None, cadata)

    def load_cert_chain(self, certfile, keyfile=None, password=None):
        return real_chain(self, paths.map(certfile), paths.map(keyfile) if keyfile is not None else None, password)

    ssl.SSLContext.load_verify_locations = load_verify_locations
    ssl.SSLContext.load_cert_chain = load_cert_chain
