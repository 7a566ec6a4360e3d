"""`pods/<name>/portforward` over websockets, as the kubelet's streaming server speaks it.

The channel protocol (`v4.channel.k8s.io`, what `kubernetes.stream.portforward` asks for): each
requested port gets two channels, data (2·i) and error (2·i + 1); the server first writes the
port as two little-endian bytes on both, then copies bytes between the data channel and one TCP
connection to that port in the pod. When the connection cannot be made the error channel gets
the runtime's message; when either side of a connection ends, its forward is over; once every
port's forward is over the websocket is closed. Only `v4.channel.k8s.io` and an unnamed binary
protocol are spoken, as the kubelet does for websockets; SPDY (what kubectl uses, directly or
tunnelled through a websocket as `SPDY/3.1+portforward.k8s.io`) is refused before the upgrade.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import WSMsgType, web

from .errors import ApiError, bad_request

V4 = "v4.channel.k8s.io"
SPDY_TUNNEL = "SPDY/3.1+portforward.k8s.io"
CHUNK = 32 * 1024


def parse_ports(values: list[str]) -> list[int]:
    """The `ports` query (repeated and/or comma-separated) → port numbers; 400 as the kubelet words it."""
    if not values:
        raise bad_request('query parameter "ports" is required')
    ports = []
    for value in values:
        if not value:
            raise bad_request('query parameter "ports" cannot be empty')
        for piece in value.split(","):
            if not piece.isdigit() or int(piece) > 65535:
                raise bad_request(f'unable to parse "{value}" as a port: strconv.ParseUint: parsing "{piece}": '
                                  + ("value out of range" if piece.isdigit() else "invalid syntax"))
            if int(piece) < 1:
                raise bad_request(f'port "{value}" must be > 0')
            ports.append(int(piece))
    return ports


def refused_message(pod: dict, port: int) -> str:
    """What containerd's CRI server reports when nothing listens on `port` in the pod's namespace."""
    uid = pod["metadata"].get("uid", "")
    sandbox = uid.replace("-", "").ljust(64, "0")[:64]
    return (f"error forwarding port {port} to pod {sandbox}, uid : failed to execute portforward in network "
            f'namespace "/var/run/netns/cni-{uid}": failed to connect to localhost:{port} inside namespace '
            f'"{sandbox}", IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused '
            f"IPv6 dial tcp6 [::1]:{port}: connect: connection refused ")


async def handle_portforward(request: web.Request, runtime: Any, pod: dict) -> web.StreamResponse:
    """Forward each of the `ports` to where `runtime.forward_port(pod, port)` says it listens."""
    name = pod["metadata"]["name"]
    if not (pod.get("spec") or {}).get("nodeName"):
        raise bad_request(f"pod {name} does not have a host assigned")
    ws = web.WebSocketResponse(protocols=(V4,), max_msg_size=0)
    offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    if not ws.can_prepare(request).ok or (offered and V4 not in offered):
        # SPDY names its ports per stream, not in the query: refuse it before asking for them
        raise ApiError(400, "port-forward over SPDY is not served by the twin: it speaks the websocket "
                            f"channel protocol {V4} (kubernetes.stream.portforward); the client offered "
                            f"{', '.join(offered) if offered else request.headers.get('Upgrade', 'no upgrade')}",
                       "BadRequest")
    ports = parse_ports(request.query.getall("ports", []))
    await ws.prepare(request)
    inboxes: list[asyncio.Queue[bytes | None]] = [asyncio.Queue() for _ in ports]
    send_lock = asyncio.Lock()

    async def send(channel: int, data: bytes) -> None:
        async with send_lock:
            await ws.send_bytes(bytes([channel]) + data)

    try:
        for i, port in enumerate(ports):
            prefix = port.to_bytes(2, "little")
            await send(2 * i, prefix)
            await send(2 * i + 1, prefix)
        forwards = asyncio.gather(*(_forward(runtime, pod, port, 2 * i, inboxes[i], send)
                                    for i, port in enumerate(ports)))
        reader = asyncio.ensure_future(_read_client(ws, inboxes))
        both: list[asyncio.Future[Any]] = [forwards, reader]
        await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
        forwards.cancel()
        reader.cancel()
        await asyncio.gather(forwards, reader, return_exceptions=True)
    except (ConnectionResetError, RuntimeError):
        pass  # the client went away mid-frame; its forwards are cancelled below by close
    await ws.close()
    return ws


async def _read_client(ws: web.WebSocketResponse, inboxes: list[asyncio.Queue[bytes | None]]) -> None:
    """Client frames → the data channel's inbox (the first byte names the channel)."""
    async for msg in ws:
        if msg.type != WSMsgType.BINARY or not msg.data:
            continue
        channel, data = msg.data[0], msg.data[1:]
        if channel % 2 == 0 and channel // 2 < len(inboxes) and data:
            inboxes[channel // 2].put_nowait(data)
    for inbox in inboxes:
        inbox.put_nowait(None)


async def _forward(runtime: Any, pod: dict, port: int, channel: int, inbox: asyncio.Queue[bytes | None],
                   send: Any) -> None:
    loop = asyncio.get_running_loop()
    machine_port = await loop.run_in_executor(None, runtime.forward_port, pod, port)
    try:
        if machine_port is None:
            raise ConnectionRefusedError
        reader, writer = await asyncio.open_connection("127.0.0.1", machine_port)
    except OSError:
        await send(channel + 1, refused_message(pod, port).encode())
        return

    async def upstream() -> None:  # client → pod
        while (data := await inbox.get()) is not None:
            writer.write(data)
            await writer.drain()

    async def downstream() -> None:  # pod → client
        while data := await reader.read(CHUNK):
            await send(channel, data)

    tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
