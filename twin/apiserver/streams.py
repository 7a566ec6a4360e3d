"""What the API server's streaming endpoints need from a node's runtime, beyond one-shot calls.

Two things stream on a real node and are served by the kubelet's streaming server:
- port-forward, which dials a port inside the pod's network namespace — here `forward_port`
  names the loopback port where the pod's `port` really accepts connections (a process
  container's listening socket), or None when nothing there could listen;
- interactive exec, where stdin, stdout and stderr flow while the command runs — here
  `exec_stream` starts the command and hands its output to an `ExecOutput` as it is produced,
  and the returned `ExecProcess` takes stdin, end of input, terminal resizes and a kill.

The runtime's side runs on its own threads; `ExecOutput` may be called from any of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

STDOUT, STDERR = 1, 2


@dataclass(frozen=True)
class ExecRequest:
    """One exec as the client asked for it (the query of `pods/exec`)."""

    argv: tuple[str, ...]
    stdin: bool = False     # the client will send input (and, on v5, close it)
    tty: bool = False       # a terminal: stderr is merged into stdout, resizes arrive
    stdin_closes: bool = True  # the client can say its input has ended (v5); a v4 client cannot


class ExecOutput(Protocol):
    """Where a running command's output goes; thread-safe, called in the order produced."""

    def write(self, stream: int, data: bytes) -> None:
        """`stream` is STDOUT or STDERR."""

    def exited(self, code: int) -> None:
        """The command ended with `code` (called once, after its last `write`)."""


class ExecProcess(Protocol):
    """A running command's input side; every call returns promptly (none waits on the command)."""

    def write_stdin(self, data: bytes) -> None: ...

    def close_stdin(self) -> None: ...

    def resize(self, width: int, height: int) -> None: ...

    def kill(self) -> None:
        """The client went away: end the command (a real runtime's exec ends with its stream)."""
