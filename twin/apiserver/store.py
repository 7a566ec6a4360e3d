"""API objects → versioned, watchable state: the one place objects are created, changed and removed.

Bookkeeping a real API server does and clients rely on: `uid`, `resourceVersion` (one counter for
everything), `generation` (bumps when anything but metadata/status changes), `creationTimestamp`,
optimistic concurrency (stale resourceVersion → 409), deletion with grace periods and finalizers,
namespace termination, and a bounded event history so a watch can resume from a resourceVersion.

Two audiences: the HTTP layer (watchers get events pushed through a thread-safe `deliver`
callable) and in-process components (kubelet, controllers, the GPU side) that `subscribe`.
Subscribers run after the store's lock is released, in event order, on the mutating thread;
events they cause are queued behind the current ones, so every subscriber sees one total order.
"""

from __future__ import annotations

import copy
import random
import threading
import uuid as uuidlib
from collections import deque
from collections.abc import Callable
from typing import Any

from . import objects, patches, schemas
from .errors import ApiError, already_exists, bad_request, conflict, invalid, not_found
from .resources import ResourceType, ResourceTypes
from .selectors import parse_field_selector, parse_label_selector

Event = tuple[int, str, str, dict | None, dict | None]  # rv, resource key, type, old, new


class Watcher:
    """One open watch: filters events for its resource/namespace/selectors, hands them on."""

    def __init__(self, rtype: ResourceType, namespace: str | None, labels: str | None, fields: str | None,
                 version: str | None, deliver: Callable[[dict | None], None], out: Callable) -> None:
        self.rtype, self.namespace, self.version = rtype, namespace, version
        self._labels = parse_label_selector(labels)
        self._fields = parse_field_selector(fields, rtype.plural)
        self._deliver, self._out = deliver, out
        self.closed = False

    def _matches(self, obj: dict | None) -> bool:
        if obj is None:
            return False
        md = obj["metadata"]
        if self.namespace is not None and md.get("namespace") != self.namespace:
            return False
        return self._labels(md.get("labels") or {}) and self._fields(obj)

    def offer(self, etype: str, old: dict | None, new: dict | None) -> None:
        """Translate a change into what this watcher sees (selector entry/exit → ADDED/DELETED)."""
        was, now = self._matches(old), self._matches(new)
        if etype == "DELETED":
            seen = "DELETED" if was else None
        elif was and now:
            seen = "MODIFIED"
        elif now:
            seen = "ADDED"
        elif was:
            seen = "DELETED"  # left the selection: a real server sends DELETED
        else:
            seen = None
        if seen and not self.closed:
            self._deliver({"type": seen, "object": self._out(self.rtype, new if new is not None else old, self.version)})

    def close(self) -> None:
        self.closed = True


class Store:
    """All objects of the twin cluster; thread-safe."""

    def __init__(self, types: ResourceTypes, clock: Any, rng: random.Random, history: int = 20_000) -> None:
        self.types = types
        self.clock = clock
        self._rng = rng
        self._objs: dict[str, dict[tuple[str, str], dict]] = {}
        self._rv = 1
        self._history: deque[Event] = deque(maxlen=history)
        self._watchers: set[Watcher] = set()
        self._subs: dict[str, list[Callable[[str, dict], None]]] = {}
        self._pending: deque[tuple[str, str, dict]] = deque()
        self._lock = threading.RLock()
        self._dispatch = threading.RLock()
        self._dispatching = threading.local()
        # Extra write checks per resource key: fn(new, old) → 422 causes (CRD names, Twin II rules).
        self.admission: dict[str, list[Callable[[dict, dict | None], list[tuple[str, str, str]]]]] = {}

    # -- lookup helpers -------------------------------------------------------------------
    def rtype(self, resource: str | ResourceType) -> ResourceType:
        if isinstance(resource, ResourceType):
            return resource
        rtype = self.types.by_key(resource)
        if rtype is None:
            raise ApiError(404, f'the server doesn\'t have a resource type "{resource}"', "NotFound")
        return rtype

    @property
    def resource_version(self) -> str:
        with self._lock:
            return str(self._rv)

    @staticmethod
    def out(rtype: ResourceType, obj: dict, version: str | None = None) -> dict:
        result = copy.deepcopy(obj)
        result["apiVersion"], result["kind"] = rtype.api_version(version), rtype.kind
        return result

    def _bucket(self, rtype: ResourceType) -> dict[tuple[str, str], dict]:
        return self._objs.setdefault(rtype.key, {})

    def _current(self, rtype: ResourceType, ns: str | None, name: str) -> dict:
        obj = self._bucket(rtype).get((ns or "", name))
        if obj is None:
            raise not_found(rtype.plural, rtype.group, name)
        return obj

    # -- reads ----------------------------------------------------------------------------
    def get(self, resource: str | ResourceType, namespace: str | None, name: str, *, version: str | None = None) -> dict:
        rtype = self.rtype(resource)
        with self._lock:
            return self.out(rtype, self._current(rtype, namespace if rtype.namespaced else None, name), version)

    def list(self, resource: str | ResourceType, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, version: str | None = None) -> list[dict]:
        return self.list_with_version(resource, namespace, label_selector=label_selector,
                                      field_selector=field_selector, version=version)[0]

    def list_with_version(self, resource: str | ResourceType, namespace: str | None = None, *,
                          label_selector: str | None = None, field_selector: str | None = None,
                          version: str | None = None) -> tuple[list[dict], str]:
        rtype = self.rtype(resource)
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector, rtype.plural)
        with self._lock:
            items = [self.out(rtype, o, version) for (ns, _), o in sorted(self._bucket(rtype).items())
                     if (namespace is None or ns == namespace)
                     and labels(o["metadata"].get("labels") or {}) and fields(o)]
            return items, str(self._rv)

    # -- writes ---------------------------------------------------------------------------
    def create(self, resource: str | ResourceType, namespace: str | None, body: dict, *,
               version: str | None = None, strict: bool = False, warnings: list[str] | None = None) -> dict:
        rtype = self.rtype(resource)
        if not isinstance(body, dict):
            raise bad_request("the body of the request was in an unknown format")
        obj = copy.deepcopy(body)
        md = obj.setdefault("metadata", {})
        if not isinstance(md, dict):
            raise bad_request("metadata must be an object")
        ns = self._namespace_for(rtype, namespace, md)
        with self._lock:
            if not md.get("name") and md.get("generateName"):
                md["name"] = objects.generate_name(md["generateName"], self._rng)
            name = md.get("name") or ""
            if problems := objects.name_problems(rtype.key, name):
                raise invalid(rtype.kind, rtype.group, name, problems)
            if ns:
                self._check_namespace_open(rtype, ns, name)
            if (ns or "", name) in self._bucket(rtype):
                raise already_exists(rtype.plural, rtype.group, name)
            for k in ("resourceVersion", "uid", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
                md.pop(k, None)
            objects.apply_defaults(rtype.key, obj, self._rng)
            self._validate(rtype, obj, version, strict, warnings)
            md.update(uid=str(uuidlib.UUID(int=self._rng.getrandbits(128), version=4)),
                      creationTimestamp=objects.timestamp(self.clock.wall()))
            if ns:
                md["namespace"] = ns
            if "spec" in obj:
                md["generation"] = 1
            obj["apiVersion"], obj["kind"] = rtype.api_version(version), rtype.kind
            self._commit(rtype, "ADDED", None, obj)
        self._drain()
        return self.out(rtype, obj, version)

    def replace(self, resource: str | ResourceType, namespace: str | None, name: str, body: dict, *,
                subresource: str | None = None, version: str | None = None, strict: bool = False,
                warnings: list[str] | None = None) -> dict:
        rtype = self.rtype(resource)
        if not isinstance(body, dict) or not isinstance(body.get("metadata", {}), dict):
            raise bad_request("the body of the request was in an unknown format")
        md = body.get("metadata") or {}
        if md.get("name") not in (None, name):
            raise bad_request(f"the name of the object ({md.get('name')}) does not match the name on the URL ({name})")
        with self._lock:
            old = self._current(rtype, namespace if rtype.namespaced else None, name)
            if md.get("resourceVersion") not in (None, "", old["metadata"]["resourceVersion"]):
                raise conflict(rtype.plural, rtype.group, name)
            new = self._updated(rtype, old, body, subresource)
            self._validate(rtype, new, version, strict, warnings)
            result = self._write(rtype, old, new)
        self._drain()
        return self.out(rtype, result, version) if result else self.out(rtype, new, version)

    def patch(self, resource: str | ResourceType, namespace: str | None, name: str, patch: Any, *,
              patch_type: str = "merge", subresource: str | None = None, version: str | None = None,
              strict: bool = False, warnings: list[str] | None = None) -> dict:
        rtype = self.rtype(resource)
        kind = {"merge": patches.MERGE_PATCH, "strategic": patches.STRATEGIC_PATCH,
                "json": patches.JSON_PATCH, "apply": patches.APPLY_PATCH}.get(patch_type, patch_type)
        with self._lock:
            old = self._current(rtype, namespace if rtype.namespaced else None, name)
            current = self.out(rtype, old, version)
            if kind == patches.JSON_PATCH:
                patched = patches.json_patch(current, patch)
            elif kind == patches.STRATEGIC_PATCH:
                if not rtype.builtin:
                    raise ApiError(415, f"the body of the request was in an unknown format - accepted media types "
                                        f"include: {patches.JSON_PATCH}, {patches.MERGE_PATCH}, {patches.APPLY_PATCH}",
                                   "UnsupportedMediaType")
                patched = patches.strategic_merge_patch(current, patch, schemas.kind_schema(
                    rtype.group, version or rtype.storage_version, rtype.kind))
            elif kind in (patches.MERGE_PATCH, patches.APPLY_PATCH):
                if not isinstance(patch, dict):
                    raise bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
                patched = patches.merge_patch(current, patch)
            else:
                raise ApiError(415, f"the body of the request was in an unknown format - accepted media types "
                                    f"include: {', '.join(patches.PATCH_TYPES)}", "UnsupportedMediaType")
            if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                raise ApiError(422, "the patch removed the object's metadata", "Invalid")
            rv = patched["metadata"].get("resourceVersion")
            if rv not in (None, "", old["metadata"]["resourceVersion"]):
                raise conflict(rtype.plural, rtype.group, name)
            if patched["metadata"].get("name") != name:
                raise bad_request(f"the name of the object ({patched['metadata'].get('name')}) does not match the name on the URL ({name})")
            new = self._updated(rtype, old, patched, subresource)
            self._validate(rtype, new, version, strict, warnings)
            result = self._write(rtype, old, new)
        self._drain()
        return self.out(rtype, result or new, version)

    def delete(self, resource: str | ResourceType, namespace: str | None, name: str, *,
               grace_period_seconds: int | None = None, preconditions: dict | None = None,
               version: str | None = None) -> tuple[dict, bool]:
        """Delete; returns (the object as last seen, whether it is gone already)."""
        rtype = self.rtype(resource)
        with self._lock:
            ns = namespace if rtype.namespaced else None
            obj = self._current(rtype, ns, name)
            pre = preconditions or {}
            if pre.get("uid") not in (None, obj["metadata"]["uid"]) or \
                    pre.get("resourceVersion") not in (None, obj["metadata"]["resourceVersion"]):
                raise ApiError(409, f'Precondition failed for {rtype.plural} "{name}"', "Conflict")
            gone = self._delete_locked(rtype, obj, grace_period_seconds)
            last = self.out(rtype, obj, version)
        self._drain()
        return last, gone

    def _delete_locked(self, rtype: ResourceType, obj: dict, grace: int | None) -> bool:
        md = obj["metadata"]
        if rtype.key == "pods":
            if grace is None:
                grace = int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
            terminal = (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if grace > 0 and (obj.get("spec") or {}).get("nodeName") and not terminal:
                if md.get("deletionTimestamp") is None or grace < md.get("deletionGracePeriodSeconds", grace + 1):
                    new = copy.deepcopy(obj)
                    new["metadata"].update(deletionTimestamp=objects.timestamp(self.clock.wall() + grace),
                                           deletionGracePeriodSeconds=grace)
                    self._commit(rtype, "MODIFIED", obj, new)
                return False
        if rtype.key == "namespaces":
            return self._terminate_namespace(rtype, obj)
        if md.get("finalizers"):
            if md.get("deletionTimestamp") is None:
                new = copy.deepcopy(obj)
                new["metadata"].update(deletionTimestamp=objects.timestamp(self.clock.wall()),
                                       deletionGracePeriodSeconds=0)
                self._commit(rtype, "MODIFIED", obj, new)
            return False
        self._remove(rtype, obj)
        return True

    def _terminate_namespace(self, rtype: ResourceType, ns_obj: dict) -> bool:
        name = ns_obj["metadata"]["name"]
        if ns_obj["metadata"].get("deletionTimestamp") is None:
            new = copy.deepcopy(ns_obj)
            new["metadata"]["deletionTimestamp"] = objects.timestamp(self.clock.wall())
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new["status"] = {"phase": "Terminating"}
            self._commit(rtype, "MODIFIED", ns_obj, new)
        for t in self.types.all():
            if t.namespaced:
                for (ns, _), obj in list(self._bucket(t).items()):
                    if ns == name and obj["metadata"].get("deletionTimestamp") is None:
                        self._delete_locked(t, obj, None)
        return self._finish_namespace(name)

    def _finish_namespace(self, name: str) -> bool:
        ns_rtype = self.rtype("namespaces")
        ns_obj = self._bucket(ns_rtype).get(("", name))
        if ns_obj is None or ns_obj["metadata"].get("deletionTimestamp") is None:
            return False
        if any(ns == name for t in self.types.all() if t.namespaced for (ns, _) in self._bucket(t)):
            return False
        self._remove(ns_rtype, ns_obj)
        return True

    # -- internals ------------------------------------------------------------------------
    def _namespace_for(self, rtype: ResourceType, namespace: str | None, md: dict) -> str | None:
        if not rtype.namespaced:
            return None
        body_ns = md.get("namespace")
        if namespace and body_ns and body_ns != namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        ns = namespace or body_ns
        if not ns:
            raise bad_request("an empty namespace may not be set during creation")
        return ns

    def _check_namespace_open(self, rtype: ResourceType, ns: str, name: str) -> None:
        ns_obj = self._bucket(self.rtype("namespaces")).get(("", ns))
        if ns_obj is None:
            raise not_found("namespaces", "", ns)
        if ns_obj["metadata"].get("deletionTimestamp"):
            raise ApiError(403, f'{rtype.plural} "{name}" is forbidden: unable to create new content in namespace '
                                f"{ns} because it is being terminated", "Forbidden", kind=rtype.plural, name=name)

    def _updated(self, rtype: ResourceType, old: dict, body: dict, subresource: str | None) -> dict:
        """The object an update would store: identity from `old`, spec/status per subresource."""
        new = copy.deepcopy(body)
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        md = new.setdefault("metadata", {})
        for k in ("uid", "creationTimestamp", "namespace", "name", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "generation", "resourceVersion"):
            if k in old["metadata"]:
                md[k] = old["metadata"][k]
            else:
                md.pop(k, None)
        has_status = "status" in rtype.subresources
        if subresource == "status":
            kept = copy.deepcopy(old)
            kept["status"] = new.get("status", {})
            if md.get("labels") is not None or md.get("annotations") is not None:
                kept["metadata"]["labels"] = md.get("labels", old["metadata"].get("labels"))
                kept["metadata"]["annotations"] = md.get("annotations", old["metadata"].get("annotations"))
            return kept
        if has_status and "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        elif has_status:
            new.pop("status", None)
        if rtype.key == "pods" and (problems := objects.pod_update_problems(old, new)):
            raise invalid(rtype.kind, rtype.group, md["name"], problems)
        if md.get("deletionTimestamp") and len(md.get("finalizers") or []) > len(old["metadata"].get("finalizers") or []):
            raise invalid(rtype.kind, rtype.group, md["name"], [(
                "FieldValueForbidden", "metadata.finalizers",
                "Forbidden: no new finalizers can be added if the object is being deleted")])
        return new

    def _validate(self, rtype: ResourceType, obj: dict, version: str | None, strict: bool,
                  warnings: list[str] | None) -> None:
        version = version or rtype.storage_version
        if rtype.builtin:
            causes, unknown = schemas.validate(rtype.group, version, rtype.kind, obj)
        elif rtype.schemas.get(version):
            causes, unknown = schemas.validate_with(rtype.schemas[version], obj)
        else:
            causes, unknown = [], []
        name = obj["metadata"].get("name", "")
        for check in self.admission.get(rtype.key, ()):
            causes = causes + check(obj, self._bucket(rtype).get((obj["metadata"].get("namespace", ""), name)))
        if causes:
            raise invalid(rtype.kind, rtype.group, name, causes)
        if unknown and strict:
            raise bad_request(f"strict decoding error: {', '.join(f'unknown field {u!r}' for u in unknown)}".replace("'", '"'))
        if warnings is not None:
            warnings += [f'unknown field "{u}"' for u in unknown]

    def _write(self, rtype: ResourceType, old: dict, new: dict) -> dict | None:
        """Commit an update; returns None when it completed a deletion (finalizers emptied)."""
        if {k: v for k, v in new.items() if k not in ("metadata", "status")} != \
                {k: v for k, v in old.items() if k not in ("metadata", "status")} and "generation" in old["metadata"]:
            new["metadata"]["generation"] = old["metadata"]["generation"] + 1
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers") \
                and not (rtype.key == "pods" and (new.get("spec") or {}).get("nodeName")
                         and (new.get("status") or {}).get("phase") not in ("Succeeded", "Failed")):
            self._commit(rtype, "MODIFIED", old, new)
            self._remove(rtype, new)
            return None
        self._commit(rtype, "MODIFIED", old, new)
        return new

    def _remove(self, rtype: ResourceType, obj: dict) -> None:
        md = obj["metadata"]
        key = (md.get("namespace", ""), md["name"])
        current = self._bucket(rtype).pop(key, None)
        if current is None:
            return
        self._rv += 1
        gone = copy.deepcopy(current)
        gone["metadata"]["resourceVersion"] = str(self._rv)
        self._record("DELETED", rtype, current, gone)
        if rtype.namespaced and md.get("namespace"):
            self._finish_namespace(md["namespace"])

    def _commit(self, rtype: ResourceType, etype: str, old: dict | None, new: dict) -> None:
        self._rv += 1
        new["metadata"]["resourceVersion"] = str(self._rv)
        md = new["metadata"]
        self._bucket(rtype)[(md.get("namespace", ""), md["name"])] = new
        self._record(etype, rtype, old, new)

    def _record(self, etype: str, rtype: ResourceType, old: dict | None, new: dict) -> None:
        self._history.append((self._rv, rtype.key, etype, old, new))
        for w in list(self._watchers):
            if w.rtype.key == rtype.key:
                self._offer(w, etype, old, new)
        self._pending.append((rtype.key, etype, new))

    def _drain(self) -> None:
        """Run subscribers for queued events, in order; nested writes queue behind."""
        if getattr(self._dispatching, "active", False):
            return
        with self._dispatch:
            self._dispatching.active = True
            try:
                while True:
                    with self._lock:
                        if not self._pending:
                            return
                        key, etype, obj = self._pending.popleft()
                        subs = list(self._subs.get(key, ()))
                        rtype = self.types.by_key(key)
                    for fn in subs:
                        fn(etype, self.out(rtype, obj) if rtype else copy.deepcopy(obj))
            finally:
                self._dispatching.active = False

    # -- subscriptions and watches -----------------------------------------------------------
    def subscribe(self, resource: str, fn: Callable[[str, dict], None]) -> Callable[[], None]:
        with self._lock:
            self._subs.setdefault(resource, []).append(fn)
        return lambda: self._subs.get(resource, []).remove(fn) if fn in self._subs.get(resource, []) else None

    def watch(self, resource: str | ResourceType, namespace: str | None, *, label_selector: str | None = None,
              field_selector: str | None = None, resource_version: str | None = None,
              version: str | None = None, deliver: Callable[[dict | None], None]) -> Watcher:
        """Open a watch: past events after `resource_version` (or synthetic ADDED) then live ones."""
        rtype = self.rtype(resource)
        watcher = Watcher(rtype, namespace, label_selector, field_selector, version, deliver, self.out)
        with self._lock:
            if resource_version in (None, "", "0"):
                for (ns, _), obj in sorted(self._bucket(rtype).items()):
                    watcher.offer("ADDED", None, obj)
            else:
                try:
                    since = int(resource_version)
                except ValueError:
                    raise bad_request(f"invalid resource version: {resource_version!r}") from None
                oldest = self._history[0][0] if self._history else self._rv + 1
                if since < oldest - 1 and since < self._rv:
                    raise ApiError(410, f"too old resource version: {since} ({oldest - 1})", "Expired")
                for rv, key, etype, old, new in self._history:
                    if rv > since and key == rtype.key:
                        self._offer(watcher, etype, old, new)
            self._watchers.add(watcher)
        return watcher

    @staticmethod
    def _offer(watcher: Watcher, etype: str, old: dict | None, new: dict) -> None:
        if etype == "DELETED":  # `new` is the last state; a DELETED has no "after"
            watcher.offer("DELETED", new, None)
        else:
            watcher.offer(etype, old, new)

    def unwatch(self, watcher: Watcher) -> None:
        watcher.close()
        with self._lock:
            self._watchers.discard(watcher)

    # -- events ---------------------------------------------------------------------------
    def record_event(self, involved: dict, reason: str, message: str, *, type: str = "Normal",
                     component: str = "twin") -> dict:
        """Create a core/v1 Event about `involved` in its namespace (or `default`)."""
        md = involved["metadata"]
        ns = md.get("namespace") or "default"
        now = objects.timestamp(self.clock.wall())
        body = {"metadata": {"name": f"{md['name']}.{self._rng.getrandbits(64):016x}", "namespace": ns},
                "involvedObject": {"kind": involved.get("kind"), "namespace": md.get("namespace"),
                                   "name": md["name"], "uid": md.get("uid"),
                                   "apiVersion": involved.get("apiVersion"),
                                   "resourceVersion": md.get("resourceVersion")},
                "reason": reason, "message": message, "type": type, "count": 1,
                "source": {"component": component}, "reportingComponent": component,
                "firstTimestamp": now, "lastTimestamp": now}
        try:
            return self.create("events", ns, body)
        except ApiError:  # namespace terminating: events are best-effort, as on a real cluster
            return body
