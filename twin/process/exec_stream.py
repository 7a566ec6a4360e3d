"""A real command exec'd in a process container, its streams flowing while it runs.

Without a terminal the command gets three pipes; with one (`tty`) it gets a new pseudo-terminal
as its controlling terminal, so the line discipline echoes input, turns `\\n` into `\\r\\n`, and a
resize reaches it as SIGWINCH — what `kubectl exec -it` relies on. Output is read in whatever
pieces the command writes (a prompt without a newline arrives at once). End of input closes the
pipe, or types the terminal's end-of-file character; a kill is SIGKILL to the command's session.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import signal
import struct
import subprocess
import termios
import threading
from collections.abc import Callable

from ..apiserver.streams import STDERR, STDOUT, ExecOutput, ExecRequest

CHUNK = 32 * 1024


class PipedExec:
    """One running exec (an `ExecProcess`); `start` spawns it through `spawn`."""

    def __init__(self, request: ExecRequest, output: ExecOutput, on_end: Callable[[subprocess.Popen], None]) -> None:
        self._request, self._output, self._on_end = request, output, on_end
        self._proc: subprocess.Popen | None = None
        self._terminal: int | None = None      # the pseudo-terminal's controlling side
        self._lock = threading.Lock()

    def start(self, spawn: Callable[..., subprocess.Popen], argv: list[str]) -> None:
        """`spawn(argv, stdin=…, stdout=…, stderr=…, terminal=…)` as the runtime spawns children."""
        readers: list[threading.Thread] = []
        if self._request.tty:
            controller, terminal = os.openpty()
            try:
                self._proc = spawn(argv, stdin=terminal, stdout=terminal, stderr=terminal, terminal=True)
            except BaseException:
                os.close(controller)
                raise
            finally:
                os.close(terminal)  # the command holds it now; its end of file is the command's end
            self._terminal = controller
            readers.append(self._reader(lambda: _read_terminal(controller), STDOUT))
        else:
            self._proc = spawn(argv, stdin=subprocess.PIPE if self._request.stdin else subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, terminal=False)
            assert self._proc.stdout is not None and self._proc.stderr is not None  # both are pipes
            for fd, stream in ((self._proc.stdout.fileno(), STDOUT), (self._proc.stderr.fileno(), STDERR)):
                readers.append(self._reader(functools.partial(os.read, fd, CHUNK), stream))
        threading.Thread(target=self._wait, args=(readers,), daemon=True,
                         name=f"twin-exec-wait-{self._proc.pid}").start()

    def _reader(self, read: Callable[[], bytes], stream: int) -> threading.Thread:
        def pump() -> None:
            while data := read():
                self._output.write(stream, data)
        thread = threading.Thread(target=pump, daemon=True, name=f"twin-exec-read-{stream}")
        thread.start()
        return thread

    def _wait(self, readers: list[threading.Thread]) -> None:
        assert self._proc is not None
        code = self._proc.wait()
        for reader in readers:  # every byte written before the exit reaches the client before the status
            reader.join()
        with self._lock:
            for pipe in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
            if self._terminal is not None:
                os.close(self._terminal)
                self._terminal = None
        self._on_end(self._proc)
        self._output.exited(128 - code if code < 0 else code)

    # -- ExecProcess ----------------------------------------------------------------------
    def write_stdin(self, data: bytes) -> None:
        with self._lock:
            try:
                if self._terminal is not None:
                    os.write(self._terminal, data)
                elif self._proc is not None and self._proc.stdin is not None and not self._proc.stdin.closed:
                    self._proc.stdin.write(data)
                    self._proc.stdin.flush()
            except OSError:
                pass  # the command has stopped reading (exited, or closed its input)

    def close_stdin(self) -> None:
        with self._lock:
            try:
                if self._terminal is not None:
                    os.write(self._terminal, termios.tcgetattr(self._terminal)[6][termios.VEOF])
                elif self._proc is not None and self._proc.stdin is not None:
                    self._proc.stdin.close()
            except OSError:
                pass

    def resize(self, width: int, height: int) -> None:
        with self._lock:
            if self._terminal is not None:
                with contextlib.suppress(OSError):
                    fcntl.ioctl(self._terminal, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)


def _read_terminal(fd: int) -> bytes:
    """The terminal's output; EIO once the command and everything it started have closed it."""
    try:
        return os.read(fd, CHUNK)
    except OSError:
        return b""


def take_terminal() -> None:
    """In the child (a new session's leader): make stdin, the pseudo-terminal, its controlling one."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
