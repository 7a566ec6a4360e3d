"""Pod I/O subresources → the kubelet: `/log`, `/exec` (websocket channel protocol), `/proxy`.

Exec speaks the channel protocol `kubernetes.stream.stream` uses: each binary frame starts with a
channel byte — 0 stdin, 1 stdout, 2 stderr, 3 status (a `Status` JSON), and in
v5.channel.k8s.io 255 to close a channel (how a client says "stdin is done").  The server
prefers v5 when the client offers it (as Kubernetes ≥ 1.30 does) and falls back to v4; with v4
and `stdin=true` the command runs after the first stdin frame, since v4 cannot signal EOF.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import Any, Protocol

from aiohttp import WSMsgType, web

from .errors import ApiError, bad_request
from .objects import timestamp
from .store import Store

V4, V5 = "v4.channel.k8s.io", "v5.channel.k8s.io"
STDIN, STDOUT, STDERR, STATUS, CLOSE = 0, 1, 2, 3, 255
FRAME = 32 * 1024


class PodRuntime(Protocol):
    """What the kubelet offers the API server for a pod's containers (errors are ApiError)."""

    def logs(self, pod: dict, container: str, previous: bool = False) -> list[tuple[float, str]]: ...

    def ensure_running(self, pod: dict, container: str) -> None: ...

    def follow_logs(self, pod: dict, container: str, fn: Any) -> Any: ...

    def exec(self, pod: dict, container: str, argv: list[str], stdin: bytes | None) -> Any: ...

    def proxy(self, pod: dict, port: int | None, path: str) -> tuple[int, str, bytes] | None: ...

    def forward_port(self, pod: dict, port: int) -> int | None:
        """The loopback port where the pod's `port` accepts connections; None: nothing listens."""


def choose_container(pod: dict, requested: str | None) -> str:
    """The container a request means; 400 with the real messages when it is ambiguous or absent."""
    names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
    name = pod["metadata"]["name"]
    if requested:
        if requested not in names:
            raise bad_request(f"container {requested} is not valid for pod {name}")
        return requested
    if len(names) == 1:
        return names[0]
    raise bad_request(f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]")


def _render(entries: list[tuple[float, str]], stamps: bool) -> bytes:
    return "".join((f"{timestamp(t)} " if stamps else "") + line + "\n" for t, line in entries).encode()


async def handle_log(request: web.Request, runtime: PodRuntime, pod: dict, now_wall: float) -> web.StreamResponse:
    """GET pods/<name>/log; with `follow=true` the body streams until the container ends."""
    q = request.query
    body = logs_text(runtime, pod, q, now_wall)
    if q.get("follow", "").lower() not in ("1", "true") or _flag(q, "previous"):
        return web.Response(body=body, content_type="text/plain")
    container = choose_container(pod, q.get("container"))
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    stop = runtime.follow_logs(pod, container, lambda entry: loop.call_soon_threadsafe(queue.put_nowait, entry))
    resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
    resp.enable_chunked_encoding()
    stamps = q.get("timestamps", "").lower() in ("1", "true")
    try:
        await resp.prepare(request)
        await resp.write(body)
        while (entry := await queue.get()) is not None:
            await resp.write(_render([entry], stamps))
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        stop()
    return resp


def logs_text(runtime: PodRuntime, pod: dict, query: Any, now_wall: float) -> bytes:
    container = choose_container(pod, query.get("container"))
    lines = runtime.logs(pod, container, previous=_flag(query, "previous"))
    if query.get("sinceSeconds"):
        try:
            since = int(query["sinceSeconds"])
        except ValueError:
            raise bad_request(f"invalid sinceSeconds: {query['sinceSeconds']!r}") from None
        if since < 1:
            raise ApiError(422, "PodLogOptions \"\" is invalid: sinceSeconds: Invalid value: must be greater than 0",
                           "Invalid")
        lines = [(t, line) for t, line in lines if t >= now_wall - since]
    if query.get("sinceTime"):
        try:
            since_wall = datetime.fromisoformat(str(query["sinceTime"])).timestamp()
        except ValueError:
            raise bad_request(f"invalid sinceTime: {query['sinceTime']!r} (RFC 3339 expected)") from None
        lines = [(t, line) for t, line in lines if t >= since_wall]
    if query.get("tailLines"):
        try:
            tail = int(query["tailLines"])
        except ValueError:
            raise bad_request(f"invalid tailLines: {query['tailLines']!r}") from None
        lines = lines[-tail:] if tail > 0 else []
    return _render(lines, query.get("timestamps", "").lower() in ("1", "true"))


def _flag(query: Any, name: str) -> bool:
    return str(query.get(name, "")).lower() in ("1", "true")


def status_for(exit_code: int, argv: list[str]) -> dict:
    if exit_code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command {argv}, "
                       f"exit code {exit_code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(exit_code)}]}}


async def handle_exec(request: web.Request, store: Store, runtime: PodRuntime, namespace: str | None, name: str) -> web.StreamResponse:
    q = request.query
    pod = store.get("pods", namespace, name)
    argv = q.getall("command", [])
    if not argv:
        raise bad_request("you must specify at least 1 command")
    container = choose_container(pod, q.get("container"))
    runtime.ensure_running(pod, container)  # refused before the upgrade, as a real kubelet does
    ws = web.WebSocketResponse(protocols=(V5, V4), max_msg_size=0)
    if not ws.can_prepare(request).ok:
        raise ApiError(400, "Upgrade request required", "BadRequest")
    await ws.prepare(request)
    protocol = ws.ws_protocol or V4
    stdin: bytes | None = None
    if q.get("stdin", "").lower() in ("1", "true"):
        stdin = await _read_stdin(ws, protocol)
    loop = asyncio.get_running_loop()
    try:
        result = await loop.run_in_executor(None, runtime.exec, pod, container, argv, stdin)
        code, out, err = result.exit_code, result.stdout, result.stderr
    except ApiError as exc:
        code, out, err = 1, b"", (exc.message + "\n").encode()
    want_out = q.get("stdout", "true").lower() in ("1", "true")
    want_err = q.get("stderr", "true").lower() in ("1", "true")
    try:
        for channel, data, wanted in ((STDOUT, out, want_out), (STDERR, err, want_err)):
            for i in range(0, len(data), FRAME) if wanted else ():
                await ws.send_bytes(bytes([channel]) + data[i:i + FRAME])
        await ws.send_bytes(bytes([STATUS]) + json.dumps(status_for(code, argv)).encode())
    except (ConnectionResetError, RuntimeError):
        pass  # the client went away; nothing left to tell it
    await ws.close()
    return ws


async def _read_stdin(ws: web.WebSocketResponse, protocol: str) -> bytes:
    data = b""
    async for msg in ws:
        if msg.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
            break
        raw = msg.data if isinstance(msg.data, bytes) else msg.data.encode()
        if not raw:
            continue
        if raw[0] == CLOSE and protocol == V5:
            break
        if raw[0] == STDIN:
            data += raw[1:]
            if protocol == V4:
                break
    return data


def parse_proxy_name(name: str) -> tuple[str, int | None]:
    """`pod`, `pod:port` or `scheme:pod:port` → (pod name, port)."""
    parts = name.split(":")
    if len(parts) == 3:
        parts = parts[1:]
    if len(parts) == 2:
        try:
            return parts[0], int(parts[1])
        except ValueError:
            raise bad_request(f"invalid port in proxy name: {name!r}") from None
    return parts[0], None
