"""The store → an HTTP API server on 127.0.0.1:<free port>, run by aiohttp on a background thread.

Why aiohttp: one library gives us a plain HTTP/1.1 server with chunked streaming (watch,
log) *and* server-side websockets with subprotocol negotiation (exec), all on one event loop
we can start and stop inside a test process.  The store is synchronous and thread-safe; handlers
call it directly (every call is short) so there is no second copy of state and no RPC.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
from collections.abc import Callable

from aiohttp import web

from . import discovery, encoding, openapi, podio, portforward, rest
from .auth import Auth, Request, default_key
from .errors import ApiError, bad_request, resource_missing
from .store import Store

log = logging.getLogger(__name__)

MAX_BODY = 3 * 1024 * 1024  # the real API server's request size limit


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ApiServer:
    """Serves `store` (and pod I/O through `runtime`) until `stop()`."""

    def __init__(self, store: Store, runtime: podio.PodRuntime | None = None, *, port: int = 0,
                 max_body: int = MAX_BODY, auth: Auth | None = None) -> None:
        self.store = store
        self.auth = auth or Auth(store, default_key(b""))
        self.runtime = runtime
        self.max_body = max_body
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.port = 0
        self.https_port = 0  # the HTTPS listener's port once `serve_tls` has started one
        # aiohttp RouteDefs other parts of the twin mount beside the Kubernetes API (added
        # before `start`; e.g. the GPU side's `/twin/v1/faults`).
        self.extra_routes: list[web.AbstractRouteDef] = []
        # aiohttp middlewares other parts of the twin put in front of every request (added
        # before `start`; e.g. the injected API faults of `twin/faults.py`).
        self.extra_middlewares: list[Callable] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- life cycle -----------------------------------------------------------------------
    def start(self) -> ApiServer:
        self._thread = threading.Thread(target=self._serve, name="twin-apiserver", daemon=True)
        self._thread.start()
        self._ready.wait(timeout=30)
        if self._error is not None:
            raise RuntimeError(f"twin API server failed to start: {self._error}") from self._error
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        fut = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        try:
            fut.result(timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop = None

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._startup())
        except (OSError, RuntimeError) as exc:  # report to the starting thread instead of dying silently
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        loop.run_forever()
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())  # exec worker threads
        loop.close()

    async def _startup(self) -> None:
        app = web.Application(client_max_size=self.max_body, middlewares=[*self.extra_middlewares, self._errors])
        app[rest.MAX_BODY_KEY] = self.max_body
        app[rest.WATCH_QUEUES_KEY] = set()
        app.router.add_routes(self.extra_routes)
        app.router.add_route("*", "/{path:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port or free_port())
        await site.start()
        self.port = self._runner.addresses[0][1]  # the port actually bound
        self._app = app

    def serve_tls(self, context: ssl.SSLContext) -> int:
        """Also serve the same API over HTTPS on a free loopback port (once; started or not); returns it."""
        if self.https_port:
            return self.https_port
        # Asked for while the twin is still starting (a world's start hooks apply manifests before
        # `start`, and a real-time clock may start a pod meanwhile): wait, as a kubelet waits for
        # its API server. Once stopped, `_loop` is None again and the ask fails.
        self._ready.wait(timeout=30)
        if self._loop is None or self._runner is None:
            raise RuntimeError("serve_tls: the API server is not running")

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))  # bound here and handed over: no window for another process to take it
        runner = self._runner

        async def start() -> int:
            await web.SockSite(runner, sock, ssl_context=context).start()
            return sock.getsockname()[1]
        self.https_port = asyncio.run_coroutine_threadsafe(start(), self._loop).result(timeout=30)
        return self.https_port

    async def _shutdown(self) -> None:
        queues = self._app[rest.WATCH_QUEUES_KEY]
        for queue in list(queues):
            queue.put_nowait(None)
        if self._runner is not None:
            await self._runner.cleanup()

    # -- requests -------------------------------------------------------------------------
    @web.middleware
    async def _errors(self, request: web.Request, handler: Callable) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as exc:
            return encoding.json_response(exc.status(), status=exc.code)
        except web.HTTPException:
            raise
        except Exception:  # never a traceback in a body: log it, answer like a real server
            log.exception("twin API server: %s %s failed", request.method, request.path)
            err = ApiError(500, "an error on the server has prevented the request from succeeding", "InternalError")
            return encoding.json_response(err.status(), status=500)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        if path in ("/healthz", "/readyz", "/livez"):
            return web.Response(text="ok")
        if path == "/version":
            return encoding.json_response(discovery.VERSION_INFO)
        if path == "/openapi/v3" or path.startswith("/openapi/v3/"):
            return self._openapi(path.removeprefix("/openapi/v3").strip("/"))
        user = self.auth.authenticate(request.headers.get("Authorization"))
        target = rest.parse_path(self.store, path)
        if isinstance(target, dict):
            self.auth.check(user, Request("get", path=path))
            if request.method != "GET":
                raise ApiError(405, f"{request.method} is not supported on discovery documents", "MethodNotAllowed")
            return encoding.json_response(target)
        verb = rest.verb_of(request.method, target, request.query.get("watch", "").lower() in ("1", "true"))
        # As the real server's request info: a request for one namespace object is a request in
        # that namespace, so a RoleBinding there can grant `get` on that namespace (and no other).
        scope = target.name if target.rtype.key == "namespaces" and target.name else target.namespace
        self.auth.check(user, Request(verb, target.rtype.group, target.rtype.plural, target.sub or "",
                                      scope, target.name))
        if target.rtype.key == "pods" and target.sub in ("log", "exec", "attach", "portforward", "proxy"):
            return await self._pod_io(request, target)
        if target.rtype.key == "services" and target.sub == "proxy":
            return await self._service_proxy(target)
        return await rest.handle_resource(request, self.store, target, self.auth, user)

    def _openapi(self, gv_path: str) -> web.Response:
        if not gv_path:
            return encoding.json_response(openapi.index(self.store.types))
        parts = gv_path.split("/")
        group, version = ("", parts[1]) if parts[0] == "api" and len(parts) == 2 else (
            (parts[1], parts[2]) if parts[0] == "apis" and len(parts) == 3 else ("?", "?"))
        doc = openapi.group_version_doc(self.store.types, group, version)
        if doc is None:
            raise resource_missing()
        return encoding.json_response(doc)

    async def _pod_io(self, request: web.Request, target: rest.Target) -> web.StreamResponse:
        if self.runtime is None:
            raise resource_missing()
        ns = target.namespace
        if target.sub == "log":
            if request.method != "GET":
                raise ApiError(405, f"{request.method} is not supported on pods/log", "MethodNotAllowed")
            # The pod's streams (log, port-forward, exec, proxy) only read it: the store's own object.
            pod = self.store.get("pods", ns, target.named, copy=False)
            return await podio.handle_log(request, self.runtime, pod, self.store.clock.wall())
        if target.sub == "portforward":
            return await portforward.handle_portforward(request, self.runtime, self.store.get("pods", ns, target.named, copy=False))
        if target.sub in ("exec", "attach"):
            if target.sub == "attach":
                raise bad_request("attach is not supported by the twin; use exec")
            return await podio.handle_exec(request, self.store, self.runtime, ns, target.named)
        name, port = podio.parse_proxy_name(target.named)
        pod = self.store.get("pods", ns, name, copy=False)
        return await self._proxy_to(pod, port, target.tail, f"{name}:{port}")

    async def _proxy_to(self, pod: dict, port: int | None, tail: str, where: str) -> web.Response:
        """GET from a pod's container port; off the event loop, since a real program answers it."""
        assert self.runtime is not None
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(None, self.runtime.proxy, pod, port, "/" + tail)
        if answer is None:
            raise ApiError(503, f"error trying to reach service: dial tcp {where}: connect: connection refused",
                           "ServiceUnavailable")
        status, ctype, body = answer
        return web.Response(status=status, body=body, headers={"Content-Type": ctype})

    async def _service_proxy(self, target: rest.Target) -> web.Response:
        """services/NAME[:PORT]/proxy/…: to a running pod the Service selects, on the target port."""
        if self.runtime is None:
            raise resource_missing()
        name, port = podio.parse_proxy_name(target.named)
        svc = self.store.get("services", target.namespace, name)
        spec = svc.get("spec") or {}
        ports = spec.get("ports") or []
        chosen = next((p for p in ports if port is None or p.get("port") == port), None)
        if chosen is None:
            raise ApiError(503, f'no endpoints available for service "{name}"', "ServiceUnavailable")
        selector = ",".join(f"{k}={v}" for k, v in (spec.get("selector") or {}).items())
        pods = [p for p in self.store.list("pods", target.namespace, label_selector=selector or None)
                if (p.get("status") or {}).get("phase") == "Running" and selector]
        if not pods:
            raise ApiError(503, f'no endpoints available for service "{name}"', "ServiceUnavailable")
        pod = pods[0]
        wanted = chosen.get("targetPort", chosen.get("port"))
        if isinstance(wanted, str) and not wanted.isdigit():  # a named container port
            wanted = next((cp.get("containerPort") for c in pod["spec"]["containers"] for cp in c.get("ports") or []
                           if cp.get("name") == wanted), None)
        return await self._proxy_to(pod, int(wanted) if wanted is not None else None, target.tail,
                                    f"{(pod.get('status') or {}).get('podIP', '')}:{wanted}")
