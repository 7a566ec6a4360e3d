"""Pod I/O subresources → the kubelet: `/log`, `/exec` (websocket channel protocol), `/proxy`.

Exec speaks the channel protocol `kubernetes.stream.stream` uses: each binary frame starts with a
channel byte — 0 stdin, 1 stdout, 2 stderr, 3 status (a `Status` JSON), 4 terminal size
(`{"Width":…,"Height":…}`), and in v5.channel.k8s.io 255 to close a channel (how a client says
"stdin is done"). The server prefers v5 when the client offers it (as Kubernetes ≥ 1.30 does)
and falls back to v4. Input and output flow while the command runs (`streams.ExecProcess`);
a workload that only runs whole commands gets its input when it is complete — for a v4 client,
which cannot say so, at its first stdin frame.
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
from .streams import STDERR, STDOUT, ExecOutput, ExecProcess, ExecRequest

V4, V5 = "v4.channel.k8s.io", "v5.channel.k8s.io"
STDIN, STATUS, RESIZE, CLOSE = 0, 3, 4, 255
FRAME = 32 * 1024


class PodRuntime(Protocol):
    """What the kubelet offers the API server for a pod's containers (errors are ApiError)."""

    def logs(self, pod: dict, container: str, previous: bool = False) -> list[tuple[float, str]]: ...

    def ensure_running(self, pod: dict, container: str) -> None: ...

    def follow_logs(self, pod: dict, container: str, fn: Any) -> Any: ...

    def exec_stream(self, pod: dict, container: str, request: ExecRequest, output: ExecOutput) -> ExecProcess: ...

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
    """Run the command with its streams flowing both ways until it ends (then the status frame
    and the close) or the client goes (then the command is killed, as containerd does)."""
    q = request.query
    pod = store.get("pods", namespace, name, copy=False)  # read only: the container and its pod's uid
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
    tty = _flag(q, "tty")
    wanted = {STDOUT: q.get("stdout", "true").lower() in ("1", "true"),
              STDERR: q.get("stderr", "true").lower() in ("1", "true") and not tty}  # a terminal has no stderr
    exec_request = ExecRequest(tuple(argv), stdin=_flag(q, "stdin"), tty=tty, stdin_closes=protocol == V5)
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[tuple[int, Any] | None] = asyncio.Queue()
    sink = _QueueOutput(loop, events)
    try:
        process = await loop.run_in_executor(None, runtime.exec_stream, pod, container, exec_request, sink)
    except ApiError as exc:  # the container stopped between the check and the start
        sink.write(STDERR, (exc.message + "\n").encode())
        sink.exited(1)
        process = None
    reader = asyncio.ensure_future(_from_client(ws, protocol, process, exec_request.stdin))
    reader.add_done_callback(lambda _: events.put_nowait(None))
    ended = False
    try:
        while (event := await events.get()) is not None:
            channel, payload = event
            if channel == STATUS:
                await ws.send_bytes(bytes([STATUS]) + json.dumps(status_for(payload, argv)).encode())
                ended = True
                break
            if wanted.get(channel):
                for i in range(0, len(payload), FRAME):
                    await ws.send_bytes(bytes([channel]) + payload[i:i + FRAME])
    except (ConnectionResetError, RuntimeError):
        pass  # the client went away; nothing left to tell it
    finally:
        reader.cancel()
        if not ended and process is not None:
            await loop.run_in_executor(None, process.kill)
    await ws.close()
    return ws


class _QueueOutput:
    """ExecOutput → the handler's queue, from whichever thread the runtime writes on."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue) -> None:
        self._loop, self._queue = loop, queue

    def write(self, stream: int, data: bytes) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (stream, bytes(data)))

    def exited(self, code: int) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (STATUS, code))


async def _from_client(ws: web.WebSocketResponse, protocol: str, process: ExecProcess | None, stdin: bool) -> None:
    """Client frames → the command: stdin (0), v5's close of stdin (255 0), terminal size (4).
    Frames are handed over one at a time, so input keeps its order."""
    loop = asyncio.get_running_loop()
    async for msg in ws:
        if msg.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
            break
        raw = msg.data if isinstance(msg.data, bytes) else msg.data.encode()
        if not raw or process is None:
            continue
        if raw[0] == STDIN and stdin and len(raw) > 1:
            await loop.run_in_executor(None, process.write_stdin, raw[1:])
        elif raw[0] == CLOSE and protocol == V5 and raw[1:2] == bytes([STDIN]):
            await loop.run_in_executor(None, process.close_stdin)
        elif raw[0] == RESIZE:
            try:
                size = json.loads(raw[1:])
                width, height = int(size["Width"]), int(size["Height"])
            except (ValueError, KeyError, TypeError):
                continue  # the kubelet logs a malformed size and goes on
            await loop.run_in_executor(None, process.resize, width, height)


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
