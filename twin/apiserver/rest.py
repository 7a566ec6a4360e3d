"""REST requests → store calls: path parsing, CRUD, list (selectors, paging), watch streams.

Every failure leaves as a `Status` body with the code a real API server uses; nothing a client
sends can make a handler raise past `handle()`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from aiohttp import web
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from . import discovery, encoding, objects, patches, tables
from .auth import ADMIN, Auth, User
from .errors import ApiError, bad_request, method_not_allowed, resource_missing
from .resources import SUBRESOURCE_VERBS, ResourceType
from .store import Store

log = logging.getLogger(__name__)

YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", patches.APPLY_PATCH)
MAX_BODY_KEY = web.AppKey("max_body", int)
WATCH_QUEUES_KEY = web.AppKey("watch_queues", set)
MAX_WATCH_SECONDS = 1800.0  # a watch with no timeoutSeconds still ends, as on a real server
BOOKMARK_SECONDS = 60.0  # how often a watch that allows bookmarks gets one (wall time)
MAX_DEPTH = 100  # far beyond any real manifest; keeps copies and validation off the recursion limit
MAX_YAML_NODES = 1_000_000  # expanded; a real server refuses "excessive aliasing" the same way
# Kinds whose DELETE answers the deleted object even when it is gone at once (the rest answer a
# `Status`), as their registries on a real server do; the typed client deserialises accordingly.
RETURNS_DELETED_OBJECT = frozenset({"pods", "services", "serviceaccounts"})


@dataclass
class Target:
    """What a resource path names."""

    rtype: ResourceType
    version: str
    namespace: str | None
    name: str | None
    sub: str | None
    tail: str

    @property
    def named(self) -> str:
        """The object's name, for the verbs of a path that names one (get, update, patch, delete)."""
        if self.name is None:
            raise bad_request(f"this request needs the name of a {self.rtype.kind}")
        return self.name


def parse_path(store: Store, path: str) -> Target | dict:
    """A resource path → Target, or a discovery document for discovery paths."""
    parts = [p for p in path.split("/") if p]
    types = store.types
    if parts == ["api"]:
        return discovery.api_versions("127.0.0.1")
    if parts == ["apis"]:
        return discovery.api_group_list(types)
    if parts and parts[0] == "api" and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts and parts[0] == "apis" and len(parts) >= 2:
        if len(parts) == 2:
            doc = discovery.api_group(types, parts[1])
            if doc is None:
                raise resource_missing()
            return doc
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise resource_missing()
    if not rest:
        doc = discovery.resource_list(types, group, version)
        if doc is None:
            raise resource_missing()
        return doc
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
        namespace, rest = rest[1], rest[2:]
    rtype = types.by_path(group, version, rest[0])
    if rtype is None or (namespace is not None and not rtype.namespaced):
        raise resource_missing()
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if sub is not None and sub not in rtype.subresources:
        raise resource_missing()
    if sub != "proxy" and len(rest) > 3:
        raise resource_missing()
    return Target(rtype, version, namespace, name, sub, "/".join(rest[3:]))


async def read_body(request: web.Request) -> Any:
    """The request body as data; malformed JSON/YAML is a 400, too large a 413."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        limit = request.app[MAX_BODY_KEY]
        raise ApiError(413, f"Request entity too large: limit is {limit}", "RequestEntityTooLarge") from None
    if not raw.strip():
        raise bad_request("the body of the request was empty")
    if request.content_type in YAML_TYPES:
        text = raw.decode("utf-8", "replace")
        try:
            if _expanded_size(YAML(typ="safe", pure=True).compose(text), {}) > MAX_YAML_NODES:
                raise bad_request("error converting YAML to JSON: yaml: document contains excessive aliasing")
            data = YAML(typ="safe", pure=True).load(text)
        except YAMLError as exc:
            raise bad_request(f"error converting YAML to JSON: {str(exc).splitlines()[0]}") from None
    else:
        try:
            # Decoded as json.loads decodes bytes (UTF-8, or UTF-16/32 told from the first bytes), so
            # the depth is told from the very text that is parsed.
            text = raw.decode(json.detect_encoding(raw), "surrogatepass")
            # A body with fewer opening brackets than the limit cannot nest deeper, values inside
            # its innermost container counted (the common case: a patch of a few fields).
            shallow = text.count("{") + text.count("[") < MAX_DEPTH
            if not shallow and _may_nest_deeper(text, MAX_DEPTH):
                raise bad_request(f"the object is nested deeper than {MAX_DEPTH} levels")
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
        if shallow:
            return data
    if _too_deep(data):
        raise bad_request(f"the object is nested deeper than {MAX_DEPTH} levels")
    return data


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # an escape may be of any character
_NOT_BRACKET = re.compile(r"[^][{}]+")
_NESTING = {"[": 1, "{": 1, "]": -1, "}": -1}


def _may_nest_deeper(text: str, limit: int) -> bool:
    """Whether a JSON body's brackets outside strings may nest deeper than `limit`, told before it
    is parsed (in C loops: strings removed, the brackets left summed). A body nested thousands
    deep never reaches the parser's recursion then, at whose depth a garbage collection would
    run finalizers with no stack left to report what they raise. A string left open counts its
    brackets: such a body is not JSON, a 400 either way."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(map(_NESTING.__getitem__, brackets), initial=0)) > limit


def _too_deep(data: Any) -> bool:
    """Iteratively (no recursion) whether containers nest deeper than MAX_DEPTH."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(value, dict):
            stack += [(v, depth + 1) for v in value.values()]
        elif isinstance(value, list):
            stack += [(v, depth + 1) for v in value]
    return False


def _expanded_size(node: Any, memo: dict[int, int]) -> int:
    """How many nodes the YAML would have with every alias expanded (guards against alias bombs)."""
    if node is None:
        return 0
    key = id(node)
    if key not in memo:
        memo[key] = 1  # a cycle counts once; the loader rejects what it cannot build
        value = node.value if isinstance(node.value, list) else []
        children = [c for item in value for c in (item if isinstance(item, tuple) else (item,))]
        memo[key] = 1 + sum(_expanded_size(c, memo) for c in children)
    return memo[key]


def check_kind(body: Any, target: Target) -> None:
    """A body whose apiVersion/kind does not fit the endpoint is a 400, as on a real server."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request was in an unknown format - accepted media types include: "
                          "application/json, application/yaml")
    kind, api_version = body.get("kind"), body.get("apiVersion")
    expected = target.rtype.api_version(target.version)
    if kind is not None and kind != target.rtype.kind:
        raise bad_request(f'{kind} in version "{target.version}" cannot be handled as a {target.rtype.kind}: '
                          f"no kind \"{kind}\" is registered for version \"{api_version or expected}\"")
    if api_version is not None and api_version != expected:
        raise bad_request(f"the API version in the data ({api_version}) does not match the expected API version "
                          f"({expected})")


def _json(body: dict, status: int = 200, warnings: list[str] | None = None) -> web.Response:
    resp = encoding.json_response(body, status=status)
    for w in warnings or []:
        escaped = w.replace('"', '\\"')
        resp.headers.add("Warning", f'299 - "{escaped}"')
    return resp


def _success(target: Target, obj: dict) -> dict:
    md = obj.get("metadata") or {}
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": md.get("name"), "group": target.rtype.group, "kind": target.rtype.plural,
                        "uid": md.get("uid")}}


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("1", "true")


async def handle_resource(request: web.Request, store: Store, target: Target,
                          auth: Auth | None = None, user: User | None = None) -> web.StreamResponse:
    """CRUD, list and watch on a resource or collection (subresources other than status elsewhere)."""
    method, q = request.method, request.query
    verb = _verb(method, target, _flag(request, "watch"))
    if auth is not None and (answer := await _review_or_token(request, store, target, auth, user or ADMIN,
                                                                  verb_of(method, target, False))) is not None:
        return answer
    if verb not in target.rtype.verbs or (target.sub and verb not in SUBRESOURCE_VERBS.get(target.sub, ())):
        raise method_not_allowed(verb, target.rtype.plural)
    strict = q.get("fieldValidation") == "Strict"
    dry_run = _dry_run(q)
    warnings: list[str] = []
    rt, ns, version = target.rtype, target.namespace, target.version
    if verb in ("get", "list") and tables.wants_table(request.headers.get("Accept", "")):
        if verb == "get":
            items, rv = [store.get(rt, ns, target.named, version=version)], store.resource_version
        else:
            items, rv = store.list_with_version(rt, ns, label_selector=q.get("labelSelector"),
                                                field_selector=q.get("fieldSelector"), version=version)
        return _json(tables.table(rt, items, rv, store.clock.wall(), rt.printer_columns.get(version),
                                  q.get("includeObject", "Metadata")))
    # Answers are encoded and dropped: the store's own objects serve, without a copy.
    if verb == "get":
        return _json(store.get(rt, ns, target.named, version=version, copy=False))
    if verb == "list":
        return _list(request, store, target)
    if verb == "watch":
        return await _watch(request, store, target)
    if verb == "create":
        if rt.namespaced and ns is None:
            raise resource_missing()
        body = await read_body(request)
        check_kind(body, target)
        obj = store.create(rt, ns, body, version=version, strict=strict, warnings=warnings, dry_run=dry_run,
                           copy=False)
        return _json(obj, 201, warnings)
    if verb == "update":
        body = await read_body(request)
        check_kind(body, target)
        obj = store.replace(rt, ns, target.named, body, subresource=target.sub, version=version, strict=strict,
                            warnings=warnings, dry_run=dry_run, field_manager=q.get("fieldManager"), copy=False)
        return _json(obj, 200, warnings)
    if verb == "patch":
        if request.content_type not in patches.PATCH_TYPES:
            raise ApiError(415, f"the body of the request was in an unknown format - accepted media types include: "
                                f"{', '.join(patches.PATCH_TYPES)}", "UnsupportedMediaType")
        body = await read_body(request)
        existed = request.content_type != patches.APPLY_PATCH or _exists(store, rt, ns, target.named)
        obj = store.patch(rt, ns, target.named, body, patch_type=request.content_type, subresource=target.sub,
                          version=version, strict=strict, warnings=warnings, dry_run=dry_run,
                          field_manager=q.get("fieldManager"), force=_flag(request, "force"), copy=False)
        return _json(obj, 200 if existed else 201, warnings)
    if verb == "delete":
        opts = await _delete_options(request)
        grace = opts.get("gracePeriodSeconds")
        obj, gone = store.delete(rt, ns, target.named, grace_period_seconds=grace, preconditions=opts.get("preconditions"),
                                 propagation=opts.get("propagationPolicy"), version=version,
                                 dry_run=dry_run or opts.get("dryRun") == ["All"])
        if rt.key in objects.DEFAULT_PROPAGATION and not opts.get("propagationPolicy"):
            warnings.append(f"child pods are preserved by default when {rt.plural} are deleted; set "
                            "propagationPolicy=Background to remove them or set propagationPolicy=Orphan to "
                            "suppress this warning")
        returns_object = rt.key in RETURNS_DELETED_OBJECT or not rt.builtin or not gone
        return _json(obj if returns_object else _success(target, obj), 200, warnings)
    if verb == "deletecollection":
        opts = await _delete_options(request)
        for obj in store.list(rt, ns, label_selector=q.get("labelSelector"), field_selector=q.get("fieldSelector")):
            try:
                store.delete(rt, obj["metadata"].get("namespace"), obj["metadata"]["name"],
                             grace_period_seconds=opts.get("gracePeriodSeconds"),
                             propagation=opts.get("propagationPolicy"))
            except ApiError as exc:
                if exc.code != 404:
                    raise
        return _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"})
    raise method_not_allowed(verb, rt.plural)


async def _review_or_token(request: web.Request, store: Store, target: Target, auth: Auth, user: User,
                           verb: str) -> web.Response | None:
    """The two create-only endpoints that store nothing: SelfSubjectAccessReview and TokenRequest."""
    if verb != "create":
        return None
    if target.rtype.key == "selfsubjectaccessreviews.authorization.k8s.io":
        body = await read_body(request)
        check_kind(body, target)
        review = {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
                  "metadata": {"creationTimestamp": None}, "spec": body.get("spec") or {},
                  "status": auth.access_review(user, body.get("spec") or {})}
        return _json(review, 201)
    if target.rtype.key == "serviceaccounts" and target.sub == "token":
        body = await read_body(request)
        seconds = int((body.get("spec") or {}).get("expirationSeconds") or 3600)
        token = auth.mint(target.namespace or "", target.name or "", seconds=seconds)
        expires = objects.timestamp(store.clock.wall() + seconds)
        return _json({"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                      "metadata": {"name": target.name, "namespace": target.namespace, "creationTimestamp": None},
                      "spec": {"audiences": ["https://kubernetes.default.svc.cluster.local"],
                               "expirationSeconds": seconds, "boundObjectRef": None},
                      "status": {"token": token, "expirationTimestamp": expires}}, 201)
    return None


def _dry_run(query: Any) -> bool:
    values = query.getall("dryRun", [])
    for value in values:
        if value != "All":
            raise bad_request(f'Invalid dry run: "{value}": supported values: "All"')
    return bool(values)


def _exists(store: Store, rtype: ResourceType, namespace: str | None, name: str) -> bool:
    try:
        store.get(rtype, namespace, name)
    except ApiError:
        return False
    return True


def verb_of(method: str, target: Target, watch: bool) -> str:
    """The API verb of a request (what RBAC decides on)."""
    if target.sub is not None and target.sub not in ("status", "scale"):
        return {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
            method, method.lower())
    return _verb(method, target, watch)


def _verb(method: str, target: Target, watch: bool) -> str:
    if target.name is None:
        return {"GET": "watch" if watch else "list", "POST": "create", "DELETE": "deletecollection"}.get(method, method.lower())
    return {"GET": "watch" if watch else "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower())


async def _delete_options(request: web.Request) -> dict:
    opts: dict = {}
    if request.can_read_body:
        raw = await request.read()
        if raw.strip():
            try:
                opts = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
            if not isinstance(opts, dict):
                raise bad_request("DeleteOptions must be an object")
    if "propagationPolicy" in request.query:
        opts["propagationPolicy"] = request.query["propagationPolicy"]
    if opts.get("orphanDependents") is not None and not opts.get("propagationPolicy"):
        opts["propagationPolicy"] = "Orphan" if opts["orphanDependents"] else "Background"
    if "gracePeriodSeconds" in request.query:
        try:
            opts["gracePeriodSeconds"] = int(request.query["gracePeriodSeconds"])
        except ValueError:
            raise bad_request(f"invalid gracePeriodSeconds: {request.query['gracePeriodSeconds']!r}") from None
    grace = opts.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or grace < 0):
        if isinstance(grace, int):
            opts["gracePeriodSeconds"] = 1  # a negative grace is treated as "as soon as possible"
        else:
            raise bad_request("gracePeriodSeconds must be an integer")
    return opts


def _list(request: web.Request, store: Store, target: Target) -> web.Response:
    q = request.query
    limit = int(q["limit"]) if q.get("limit", "").isdigit() and int(q["limit"]) > 0 else None
    if q.get("continue"):
        rv, start, key, items = store.snapshots.resume(q["continue"])
    else:
        items, rv = store.list_json(target.rtype, target.namespace, label_selector=q.get("labelSelector"),
                                    field_selector=q.get("fieldSelector"))
        start, key = 0, None
    meta: dict = {"resourceVersion": rv}
    end = len(items) if limit is None else start + limit
    if end < len(items):
        key = key or store.snapshots.keep(rv, items)
        meta["continue"] = store.snapshots.token(key, rv, end)
        meta["remainingItemCount"] = len(items) - end
    if start or end < len(items):
        items = items[start:end]
    head = encoding.dumps({"kind": target.rtype.list_kind, "apiVersion": target.rtype.api_version(target.version),
                           "metadata": meta})
    body = head[:-1] + ',"items":[' + ",".join(items) + "]}\n"  # items come encoded from the store
    return web.Response(body=body.encode(), content_type="application/json")


_WAKE = object()  # a watch's own timer, in its queue: time to end, or to send a bookmark


def _bookmark(target: Target, rv: str, initial_end: bool = False) -> dict:
    md: dict = {"resourceVersion": rv}
    if initial_end:
        md["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"type": "BOOKMARK", "object": {"kind": target.rtype.kind,
                                           "apiVersion": target.rtype.api_version(target.version), "metadata": md}}


async def _watch(request: web.Request, store: Store, target: Target) -> web.StreamResponse:
    q = request.query
    timeout = MAX_WATCH_SECONDS
    if q.get("timeoutSeconds"):
        try:
            timeout = min(float(q["timeoutSeconds"]), MAX_WATCH_SECONDS)
        except ValueError:
            raise bad_request(f"invalid timeoutSeconds: {q['timeoutSeconds']!r}") from None
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    loop_thread = threading.get_ident()

    def deliver(ev: dict | None) -> None:
        # A write made by a request on this loop needs no wake-up of the loop; call_soon keeps
        # it in order behind events other threads queued with call_soon_threadsafe.
        if threading.get_ident() == loop_thread:
            loop.call_soon(queue.put_nowait, ev)
        else:
            loop.call_soon_threadsafe(queue.put_nowait, ev)
    name_selector = f"metadata.name={target.name}" if target.name else None
    fields = ",".join(s for s in (q.get("fieldSelector"), name_selector) if s) or None
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    try:
        watcher = store.watch(target.rtype, target.namespace, label_selector=q.get("labelSelector"),
                              field_selector=fields, resource_version=q.get("resourceVersion"),
                              version=target.version, deliver=deliver)
    except ApiError as exc:
        if exc.code != 410:
            raise
        await resp.prepare(request)
        await resp.write(encoding.encode({"type": "ERROR", "object": exc.status()}))
        return resp
    as_table, first = tables.wants_table(request.headers.get("Accept", "")), True
    include = q.get("includeObject", "Metadata")
    bookmarks = _flag(request, "allowWatchBookmarks")
    if bookmarks and _flag(request, "sendInitialEvents"):  # after the initial ADDEDs, in order
        loop.call_soon(queue.put_nowait, _bookmark(target, store.resource_version, initial_end=True))
    request.app[WATCH_QUEUES_KEY].add(queue)
    # One timer wakes the watch when it is due to end or, with bookmarks, after BOOKMARK_SECONDS
    # without an event (an asyncio.wait_for per event made a task and a timer for every event).
    deadline = loop.time() + timeout
    quiet_since = loop.time()

    def wake_at() -> float:
        return min(deadline, quiet_since + BOOKMARK_SECONDS) if bookmarks else deadline
    timer = loop.call_at(wake_at(), queue.put_nowait, _WAKE)
    try:
        await resp.prepare(request)
        while deadline > loop.time():
            event = await queue.get()
            if event is _WAKE:
                now = loop.time()
                if now < wake_at():  # events came since the timer was set: the quiet time began again
                    timer = loop.call_at(wake_at(), queue.put_nowait, _WAKE)
                    continue
                if bookmarks:  # periodically, and once more as the watch ends, as the real server does
                    await resp.write(encoding.encode(_bookmark(target, store.resource_version)))
                    quiet_since = loop.time()
                if now < deadline:
                    timer = loop.call_at(wake_at(), queue.put_nowait, _WAKE)
                continue
            if event is None:  # server shutting down
                break
            if as_table and event["type"] in ("ADDED", "MODIFIED", "DELETED"):  # kubectl get -w
                event = {"type": event["type"], "object": tables.table(
                    target.rtype, [event["object"]], event["object"]["metadata"].get("resourceVersion", ""),
                    store.clock.wall(), target.rtype.printer_columns.get(target.version), include, headers=first)}
                first = False
            await resp.write(encoding.encode(event))
            quiet_since = loop.time()
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        timer.cancel()
        store.unwatch(watcher)
        request.app[WATCH_QUEUES_KEY].discard(queue)
    return resp
