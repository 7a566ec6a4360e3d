"""The child's client of the twin's view socket (one connection per process, one line per call)."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

SOCKET_ENV = "STEPGRAPH_VIEW_SOCKET"
TOKEN_ENV = "STEPGRAPH_VIEW_TOKEN"


class BridgeGone(ConnectionError):
    """The twin is not reachable (it stopped, or this container ended)."""


class Bridge:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # a socket and its file, made at the first call (socket is imported then, not at start-up)
        self._sock: Any = None
        self._file: Any = None
        self._pid = 0

    def call(self, *fields: str) -> tuple[int, list[str]]:
        """Send one request; the reply's status code and its remaining fields."""
        line = "\t".join(fields) + "\n"
        with self._lock:
            try:
                self._connected().sendall(line.encode())
                reply = self._file.readline().decode()
            except OSError as err:
                self._drop()
                raise BridgeGone(f"the twin's view socket is gone: {err}") from None
            if not reply.endswith("\n"):
                self._drop()
                raise BridgeGone("the twin closed the view socket")
        code, *rest = reply.rstrip("\n").split("\t")
        return int(code), rest

    def call_json(self, kind: str, payload: object) -> tuple[int, list[str]]:
        return self.call(kind, json.dumps(payload))

    def _connected(self):
        if self._sock is not None and self._pid == os.getpid():
            return self._sock
        self._drop()  # after fork(): never share the parent's stream
        path, token = os.environ.get(SOCKET_ENV), os.environ.get(TOKEN_ENV)
        if not path or not token:
            raise OSError("no view socket in the environment")
        import socket  # at the first call, not at every interpreter start

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        self._sock, self._file, self._pid = sock, sock.makefile("rb"), os.getpid()
        sock.sendall(f"hello\t{token}\n".encode())
        if self._file.readline() != b"0\n":
            self._drop()
            raise OSError("the twin does not know this container (it has ended)")
        return sock

    def _drop(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass  # already closed by the other side
        self._sock = self._file = None


BRIDGE = Bridge()
