"""API objects → versioned, watchable state: the one place objects are created, changed and removed.

Bookkeeping a real API server does and clients rely on: `uid`, `resourceVersion` (one counter for
everything), `generation` (bumps when anything but metadata/status changes), `creationTimestamp`,
optimistic concurrency (stale resourceVersion → 409), deletion with grace periods and finalizers,
namespace termination, a bounded event history so a watch can resume from a resourceVersion,
and Events that expire an hour after their last write.

Two audiences: the HTTP layer (watchers, `watch.py`, get events pushed through a thread-safe
`deliver` callable) and in-process components (kubelet, controllers, the GPU side) that `subscribe`.
Subscribers run after the store's lock is released, in event order, on the mutating thread;
events they cause are queued behind the current ones, so every subscriber sees one total order.
Neither audience gets a copy: what they are handed shares the stored object's contents, which no
write changes in place (a write stores a new object), and they only read it.
"""

from __future__ import annotations

import builtins  # Store.list shadows the builtin in its own annotations
import functools
import random
import threading
import uuid as uuidlib
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from . import encoding, fieldmanager, objects, patches, schemas
from .copies import copy_tree
from .dispatch import Dispatcher
from .errors import ApiError, already_exists, bad_request, conflict, invalid, not_found
from .paging import ListSnapshots
from .resources import ResourceType, ResourceTypes
from .selectors import field_value, parse_field_selector, parse_label_selector, required_field
from .watch import Watcher, WatchHub

# DeleteOptions.propagationPolicy → the finalizer that makes the garbage collector act first.
DEFAULT_MANAGER = "unknown"  # an update under field management that names no manager
PROPAGATION_FINALIZERS = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}
# kube-apiserver's --event-ttl default: an Event is stored with this time to live, renewed by each
# write to it, and removed when it runs out (a watch sees it DELETED), so Events do not pile up.
EVENT_TTL_SECONDS = 3600.0
NODE_FIELD = "spec.nodeName"


class Store:
    """All objects of the twin cluster; thread-safe."""

    def __init__(self, types: ResourceTypes, clock: Any, rng: random.Random, history: int = 20_000,
                 event_ttl: float = EVENT_TTL_SECONDS) -> None:
        self.types = types
        self.clock = clock
        self._rng = rng
        self._objs: dict[str, dict[tuple[str, str], dict]] = {}
        self._rv = 1
        self._hub = WatchHub(history, clock)
        self.snapshots = ListSnapshots(clock)
        self._lock = threading.RLock()
        self._dispatcher = Dispatcher(self._lock)
        self._posted_events: OrderedDict[tuple, list] = OrderedDict()  # [name, count] (see record_event)
        # Events by when they run out, (due, key, resourceVersion) in write order: one TTL for
        # all, so the order of writes is the order of expiry and one timer serves them all.
        self._event_ttl = event_ttl
        self._expiries: deque[tuple[float, tuple[str, str], str]] = deque()
        self._expiry_timer: Any = None
        # Pods by spec.nodeName ("" while unscheduled): every node's kubelet and agent lists the
        # pods bound to it, every tick, and must not scan the whole cluster's for them.
        self._pods_on_node: dict[str, set[tuple[str, str]]] = {}
        # Stored objects known to pass their kind's schema as they are, by (resource key,
        # (namespace, name)) → (version, resourceVersion): an update that leaves a part of one as
        # it was (its spec, its status, a status write's metadata) need not check that part again.
        # The check ran before the write set resourceVersion and generation, which are valid by
        # construction (a string, an integer). Set by updates only; a create changes the spec after
        # its check (owned selectors), a delete mark the metadata.
        self._validated: dict[tuple[str, tuple[str, str]], tuple[str, str]] = {}
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
    def out(rtype: ResourceType, obj: dict, version: str | None = None, *, copy: bool = True) -> dict:
        """`obj` as served in `version`. A stored object is never changed in place (a write stores
        a new one), so `copy=False` may share it: a shallow dict for callers that only read it
        (encode it, patch it into a new one)."""
        if copy:
            result = copy_tree(obj)
            result["apiVersion"], result["kind"] = rtype.api_version(version), rtype.kind
            return result
        return {**obj, "apiVersion": rtype.api_version(version), "kind": rtype.kind}

    def _bucket(self, rtype: ResourceType) -> dict[tuple[str, str], dict]:
        return self._objs.setdefault(rtype.key, {})

    def _current(self, rtype: ResourceType, ns: str | None, name: str) -> dict:
        obj = self._bucket(rtype).get((ns or "", name))
        if obj is None:
            raise not_found(rtype.plural, rtype.group, name)
        return obj

    # -- reads ----------------------------------------------------------------------------
    def get(self, resource: str | ResourceType, namespace: str | None, name: str, *, version: str | None = None,
            copy: bool = True) -> dict:
        """The object; `copy=False`: shared with the store, not to be changed (see `out`)."""
        rtype = self.rtype(resource)
        with self._lock:
            return self.out(rtype, self._current(rtype, namespace if rtype.namespaced else None, name), version,
                            copy=copy)

    def list(self, resource: str | ResourceType, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, version: str | None = None, copy: bool = True) -> list[dict]:
        """The matching objects; `copy=False`: shared with the store, not to be changed (see `out`)."""
        return self.list_with_version(resource, namespace, label_selector=label_selector,
                                      field_selector=field_selector, version=version, copy=copy)[0]

    def list_with_version(self, resource: str | ResourceType, namespace: str | None = None, *,
                          label_selector: str | None = None, field_selector: str | None = None,
                          version: str | None = None, copy: bool = True) -> tuple[builtins.list[dict], str]:
        rtype = self.rtype(resource)
        with self._lock:
            items = [self.out(rtype, o, version, copy=copy)
                     for o in self._matching(rtype, namespace, label_selector, field_selector)]
            return items, str(self._rv)

    def list_json(self, resource: str | ResourceType, namespace: str | None = None, *,
                  label_selector: str | None = None, field_selector: str | None = None) -> tuple[builtins.list[str], str]:
        """Like `list_with_version`, but each item already JSON-encoded without kind/apiVersion (as
        list items are served): no deep copies, which is what makes large LISTs cheap."""
        rtype = self.rtype(resource)
        with self._lock:
            items = [encoding.dumps({k: v for k, v in o.items() if k not in ("kind", "apiVersion")})
                     for o in self._matching(rtype, namespace, label_selector, field_selector)]
            return items, str(self._rv)

    def _matching(self, rtype: ResourceType, namespace: str | None, label_selector: str | None,
                  field_selector: str | None) -> builtins.list[dict]:
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector, rtype.plural)
        bucket = self._bucket(rtype)
        node = required_field(field_selector, NODE_FIELD) if rtype.key == "pods" else None
        keys = self._pods_on_node.get(node, ()) if node is not None else bucket
        candidates = ((key, bucket[key]) for key in sorted(keys))
        return [o for (ns, _), o in candidates
                if (namespace is None or ns == namespace) and labels(o["metadata"].get("labels") or {}) and fields(o)]

    # -- writes ---------------------------------------------------------------------------
    def create(self, resource: str | ResourceType, namespace: str | None, body: dict, *,
               version: str | None = None, strict: bool = False, warnings: builtins.list[str] | None = None,
               dry_run: bool = False, copy: bool = True) -> dict:
        """Create; `dry_run` runs every check and default and stores nothing (`?dryRun=All`);
        `copy=False` returns the stored object itself (see `out`)."""
        rtype = self.rtype(resource)
        if not isinstance(body, dict):
            raise bad_request("the body of the request was in an unknown format")
        obj = copy_tree(body)
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
            objects.apply_defaults(rtype.key, obj, self._rng, objects.timestamp(self.clock.wall()))
            self._validate(rtype, obj, version, strict, warnings)
            md.update(uid=str(uuidlib.UUID(int=self._rng.getrandbits(128), version=4)),
                      creationTimestamp=objects.timestamp(self.clock.wall()))
            if ns:
                md["namespace"] = ns
            objects.assign_owned_selector(rtype.key, obj)
            if "spec" in obj:
                md["generation"] = 1
            obj["apiVersion"], obj["kind"] = rtype.api_version(version), rtype.kind
            if dry_run:
                return self.out(rtype, obj, version, copy=copy)
            self._commit(rtype, "ADDED", None, obj)
        self._drain()
        return self.out(rtype, obj, version, copy=copy)

    def replace(self, resource: str | ResourceType, namespace: str | None, name: str, body: dict, *,
                subresource: str | None = None, version: str | None = None, strict: bool = False,
                warnings: builtins.list[str] | None = None, dry_run: bool = False, field_manager: str | None = None,
                copy: bool = True) -> dict:
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
            new = objects.updated(rtype, old, body, subresource)
            self._record_update(rtype, old, new, field_manager, version)
            self._validate(rtype, new, version, strict, warnings, old)
            if dry_run:
                return self.out(rtype, new, version, copy=copy)
            result = self._write(rtype, old, new, version)
        self._drain()
        return self.out(rtype, result or new, version, copy=copy)

    def patch(self, resource: str | ResourceType, namespace: str | None, name: str, patch: Any, *,
              patch_type: str = "merge", subresource: str | None = None, version: str | None = None,
              strict: bool = False, warnings: builtins.list[str] | None = None, dry_run: bool = False,
              field_manager: str | None = None, force: bool = False, copy: bool = True) -> dict:
        """Patch with one of `merge`, `strategic`, `json`, `apply` (or their content types); an
        apply patch of a missing object creates it, as server-side apply does. `copy=False`
        returns the stored object itself (see `out`)."""
        rtype = self.rtype(resource)
        kind = {"merge": patches.MERGE_PATCH, "strategic": patches.STRATEGIC_PATCH,
                "json": patches.JSON_PATCH, "apply": patches.APPLY_PATCH}.get(patch_type, patch_type)
        ns = namespace if rtype.namespaced else None
        if kind == patches.APPLY_PATCH and subresource is None and (ns or "", name) not in self._bucket(rtype):
            body = patch if isinstance(patch, dict) else {}
            if (body.get("metadata") or {}).get("name") not in (None, name):
                raise bad_request(f"the name of the object ({body['metadata']['name']}) does not match the name on the URL ({name})")
            body = {**body, "metadata": {**(body.get("metadata") or {}), "name": name}}
            body = fieldmanager.apply(None, body, field_manager or "", force, rtype.api_version(version),
                                      objects.timestamp(self.clock.wall()))
            # Not under the lock: a write delivers to subscribers, which run with it released.
            try:
                return self.create(rtype, namespace, body, version=version, strict=strict, warnings=warnings,
                                   dry_run=dry_run, copy=copy)
            except ApiError as exc:
                if exc.code != 409:
                    raise
                # created meanwhile by another writer: the apply goes to that object
        with self._lock:
            old = self._current(rtype, ns, name)
            # Merge, JSON and strategic patches build a new object and leave their input alone;
            # server-side apply gets a copy of its own.
            current = self.out(rtype, old, version, copy=kind == patches.APPLY_PATCH)
            if kind == patches.APPLY_PATCH:
                if not isinstance(patch, dict):
                    raise bad_request("the body of an apply patch must be an object")
                patched = fieldmanager.apply(current, patch, field_manager or "", force, rtype.api_version(version),
                                             objects.timestamp(self.clock.wall()))
            else:
                patched = patches.apply(kind, current, patch, builtin=rtype.builtin, schema=schemas.kind_schema(
                    rtype.group, version or rtype.storage_version, rtype.kind) if rtype.builtin else None)
            if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                raise ApiError(422, "the patch removed the object's metadata", "Invalid")
            rv = patched["metadata"].get("resourceVersion")
            if rv not in (None, "", old["metadata"]["resourceVersion"]):
                raise conflict(rtype.plural, rtype.group, name)
            if patched["metadata"].get("name") != name:
                raise bad_request(f"the name of the object ({patched['metadata'].get('name')}) does not match the name on the URL ({name})")
            new = objects.updated(rtype, old, patched, subresource, patched=True)
            if kind != patches.APPLY_PATCH:
                self._record_update(rtype, old, new, field_manager, version)
            self._validate(rtype, new, version, strict, warnings, old)
            if dry_run:
                return self.out(rtype, new, version, copy=copy)
            result = self._write(rtype, old, new, version)
        self._drain()
        return self.out(rtype, result or new, version, copy=copy)

    def _record_update(self, rtype: ResourceType, old: dict, new: dict, manager: str | None,
                       version: str | None) -> None:
        """An ordinary write takes ownership of the fields it changed — recorded once a manager is
        named or the object is under field management (so unmanaged hot paths stay cheap)."""
        if manager or old["metadata"].get("managedFields"):
            fieldmanager.record_update(old, new, manager or DEFAULT_MANAGER, rtype.api_version(version),
                                       objects.timestamp(self.clock.wall()))

    def delete(self, resource: str | ResourceType, namespace: str | None, name: str, *,
               grace_period_seconds: int | None = None, preconditions: dict | None = None,
               propagation: str | None = None, version: str | None = None,
               dry_run: bool = False, copy: bool = True) -> tuple[dict, bool]:
        """Delete; returns (the object as last seen — with its deletionTimestamp when it stays —,
        whether it is gone already); `copy=False`: that object shared with the store (see `out`)."""
        rtype = self.rtype(resource)
        with self._lock:
            ns = namespace if rtype.namespaced else None
            obj = self._current(rtype, ns, name)
            pre = preconditions or {}
            if pre.get("uid") not in (None, obj["metadata"]["uid"]) or \
                    pre.get("resourceVersion") not in (None, obj["metadata"]["resourceVersion"]):
                raise ApiError(409, f'Precondition failed for {rtype.plural} "{name}"', "Conflict")
            if dry_run:
                return self.out(rtype, obj, version, copy=copy), False
            policy = propagation or objects.DEFAULT_PROPAGATION.get(rtype.key, "Background")
            if policy not in PROPAGATION_FINALIZERS and policy != "Background":
                raise bad_request(f'DeletionPropagation "{policy}" is not supported: must be one of '
                                  '"Orphan", "Background", "Foreground"')
            gone = self._delete_locked(rtype, obj, grace_period_seconds, PROPAGATION_FINALIZERS.get(policy))
            # Still there (marked) → as it is now; gone — at once, or as its last contents went
            # (a namespace) — → as it was last seen.
            after = self._bucket(rtype).get((ns or "", name))
            last = self.out(rtype, after if after is not None and not gone else obj, version, copy=copy)
        self._drain()
        return last, gone

    def _delete_locked(self, rtype: ResourceType, obj: dict, grace: int | None, finalizer: str | None = None) -> bool:
        """Mark or remove: a grace period (pods on a node) or finalizers keep the object, with
        `deletionTimestamp` (when it may go) and `deletionGracePeriodSeconds`; a later delete may
        shorten the grace, and one with grace 0 and no finalizers left removes it. `finalizer`
        (Foreground / Orphan propagation) is added for the garbage collector to work off."""
        if rtype.key == "namespaces":
            return self._terminate_namespace(rtype, obj)
        md = obj["metadata"]
        grace = self._grace_period(rtype, obj, grace)
        finalizers = list(md.get("finalizers") or [])
        add = finalizer is not None and finalizer not in finalizers
        if grace == 0 and not finalizers and not add:
            self._remove(rtype, obj)
            return True
        mark = md.get("deletionTimestamp") is None or grace < md.get("deletionGracePeriodSeconds", 0)
        if mark or add:
            new = copy_tree(obj)
            if add:
                new["metadata"]["finalizers"] = [*finalizers, finalizer]
            if mark:
                new["metadata"].update(deletionTimestamp=objects.timestamp(self.clock.wall() + grace),
                                       deletionGracePeriodSeconds=grace)
            self._commit(rtype, "MODIFIED", obj, new)
        return False

    @staticmethod
    def _grace_period(rtype: ResourceType, obj: dict, requested: int | None) -> int:
        """Only pods have a grace period: DeleteOptions, else the spec's (default 30); a pod no
        kubelet runs (unscheduled or finished) goes at once, as the real pod strategy decides."""
        if rtype.key != "pods":
            return 0
        spec, phase = obj.get("spec") or {}, (obj.get("status") or {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        return int(spec.get("terminationGracePeriodSeconds", 30)) if requested is None else requested

    def _terminate_namespace(self, rtype: ResourceType, ns_obj: dict) -> bool:
        name = ns_obj["metadata"]["name"]
        if ns_obj["metadata"].get("deletionTimestamp") is None:
            new = copy_tree(ns_obj)
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
                                f"{ns} because it is being terminated", "Forbidden", kind=rtype.plural, name=name,
                           group=rtype.group, causes=[{"reason": "NamespaceTerminating",
                                                       "message": f"namespace {ns} is being terminated",
                                                       "field": "metadata.namespace"}])

    def _validate(self, rtype: ResourceType, obj: dict, version: str | None, strict: bool,
                  warnings: builtins.list[str] | None, old: dict | None = None) -> None:
        """`old`: the stored object `obj` replaces; what `obj` shares of it is not checked again
        when `old` is known to have passed the same schema (see `_validated`)."""
        version = version or rtype.storage_version
        known = False
        if rtype.builtin:
            known = old is not None and self._validated.get((rtype.key, _key(old))) == (
                version, old["metadata"]["resourceVersion"])
            causes, unknown = schemas.validate(rtype.group, version, rtype.kind, obj,
                                               valid_before=old if known else None)
        elif rtype.schemas.get(version):
            causes, unknown = schemas.validate_with(rtype.schemas[version], obj)
        else:
            causes, unknown = [], []
        name = obj["metadata"].get("name", "")
        # What passed these checks in `old` and is still the very same object is not checked again.
        passed = old if known else None
        causes = causes + objects.metadata_problems(obj["metadata"], passed and passed["metadata"]) + \
            objects.kind_problems(rtype.key, obj, passed)
        for check in self.admission.get(rtype.key, ()):
            causes = causes + check(obj, self._bucket(rtype).get((obj["metadata"].get("namespace", ""), name)))
        if causes:
            raise invalid(rtype.kind, rtype.group, name, causes)
        if unknown and strict:
            raise bad_request(f"strict decoding error: {', '.join(f'unknown field {u!r}' for u in unknown)}".replace("'", '"'))
        if warnings is not None:
            warnings += [f'unknown field "{u}"' for u in unknown]

    def _write(self, rtype: ResourceType, old: dict, new: dict, version: str | None) -> dict | None:
        """Commit an update `new` that passed the schema of `version`; returns None when it
        completed a deletion (finalizers emptied)."""
        if {k: v for k, v in new.items() if k not in ("metadata", "status")} != \
                {k: v for k, v in old.items() if k not in ("metadata", "status")} and "generation" in old["metadata"]:
            new["metadata"]["generation"] = old["metadata"]["generation"] + 1
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers") \
                and not new["metadata"].get("deletionGracePeriodSeconds") and rtype.key != "namespaces":
            self._commit(rtype, "MODIFIED", old, new)
            self._remove(rtype, new)
            return None
        self._commit(rtype, "MODIFIED", old, new)
        if rtype.builtin:  # after the check only metadata changed (resourceVersion, generation)
            self._validated[(rtype.key, _key(new))] = (version or rtype.storage_version,
                                                       new["metadata"]["resourceVersion"])
        return new

    def _remove(self, rtype: ResourceType, obj: dict) -> None:
        md = obj["metadata"]
        key = (md.get("namespace", ""), md["name"])
        current = self._bucket(rtype).pop(key, None)
        self._validated.pop((rtype.key, key), None)
        if current is None:
            return
        if rtype.key == "pods":
            self._index_pod(key, current, None)
        self._rv += 1
        gone = copy_tree(current)
        gone["metadata"]["resourceVersion"] = str(self._rv)
        self._record("DELETED", rtype, current, gone)
        if rtype.namespaced and md.get("namespace"):
            self._finish_namespace(md["namespace"])

    def _commit(self, rtype: ResourceType, etype: str, old: dict | None, new: dict) -> None:
        self._rv += 1
        new["metadata"]["resourceVersion"] = str(self._rv)
        md = new["metadata"]
        key = (md.get("namespace", ""), md["name"])
        bucket = self._bucket(rtype)
        if rtype.key == "pods":
            self._index_pod(key, bucket.get(key), new)
        bucket[key] = new
        self._record(etype, rtype, old, new)
        if rtype.key == "events":
            self._expiries.append((self.clock.now() + self._event_ttl, key, str(self._rv)))
            if self._expiry_timer is None:
                self._expiry_timer = self.clock.call_later(self._event_ttl, self._expire_events)

    def _index_pod(self, key: tuple[str, str], old: dict | None, new: dict | None) -> None:
        if old is not None and new is not None and old.get("spec") is new.get("spec"):
            return  # the same spec, so the same node
        was = field_value(old, NODE_FIELD) if old is not None else None
        now = field_value(new, NODE_FIELD) if new is not None else None
        if was == now:
            return
        if was is not None:
            self._pods_on_node[was].discard(key)
            if not self._pods_on_node[was]:
                del self._pods_on_node[was]
        if now is not None:
            self._pods_on_node.setdefault(now, set()).add(key)

    def _expire_events(self) -> None:
        """Remove the Events whose time ran out (each write renews it: an entry whose object has
        been written since is stale), then wait for the next one."""
        rtype = self.rtype("events")
        with self._lock:
            now = self.clock.now()
            while self._expiries and self._expiries[0][0] <= now:
                _, key, rv = self._expiries.popleft()
                obj = self._bucket(rtype).get(key)
                if obj is not None and obj["metadata"]["resourceVersion"] == rv:
                    self._remove(rtype, obj)
            self._expiry_timer = (self.clock.call_later(self._expiries[0][0] - now, self._expire_events)
                                  if self._expiries else None)
        self._drain()

    def _record(self, etype: str, rtype: ResourceType, old: dict | None, new: dict) -> None:
        self._hub.record((self._rv, rtype.key, etype, old, new))
        self._dispatcher.queue(rtype.key, etype, new)

    def _drain(self) -> None:
        self._dispatcher.drain(self._render)

    def _render(self, key: str, obj: dict) -> dict:
        """A subscriber's view: its own top level, the stored object's contents (see `out`)."""
        rtype = self.types.by_key(key)
        return self.out(rtype, obj, copy=False) if rtype else copy_tree(obj)

    # -- subscriptions and watches -----------------------------------------------------------
    def subscribe_all(self, fn: Callable[[str, str, dict], None]) -> None:
        """Call `fn(resource_key, event_type, obj)` after every change to any resource."""
        self._dispatcher.subscribe_all(fn)

    def subscribe(self, resource: str, fn: Callable[[str, dict], None]) -> Callable[[], None]:
        """Call `fn(event_type, obj)` after every change to `resource` (see dispatch.py)."""
        return self._dispatcher.subscribe(resource, fn)

    def watch(self, resource: str | ResourceType, namespace: str | None, *, label_selector: str | None = None,
              field_selector: str | None = None, resource_version: str | None = None,
              version: str | None = None, deliver: Callable[[dict | None], None]) -> Watcher:
        """Open a watch: past events after `resource_version` (or synthetic ADDED) then live ones."""
        rtype = self.rtype(resource)
        # A watch only encodes what it is sent: the stored objects serve without a copy.
        watcher = Watcher(rtype, namespace, label_selector, field_selector, version, deliver,
                          functools.partial(self.out, copy=False))
        with self._lock:
            current = [obj for _, obj in sorted(self._bucket(rtype).items())]
            self._hub.open(watcher, resource_version, current, self._rv)
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        with self._lock:
            self._hub.close(watcher)

    # -- events ---------------------------------------------------------------------------
    def record_event(self, involved: dict, reason: str, message: str, *, type: str = "Normal",
                     component: str = "twin") -> dict:
        """Create a core/v1 Event about `involved` in its namespace (or `default`); the Event
        returned is the stored one (not to be changed, see `out`)."""
        md = involved["metadata"]
        ns = md.get("namespace") or "default"
        # client-go's recorder counts a repeat of an identical Event on the one it posted before
        # (its EventCorrelator keys them so, in an LRU of 4,096), instead of posting a new one.
        # Only the count is taken under the lock: the writes deliver to subscribers, which must
        # run with it released (see dispatch.py).
        same = (component, involved.get("kind"), md.get("namespace"), md["name"], md.get("uid"),
                involved.get("apiVersion"), type, reason, message)
        with self._lock:
            posted = self._posted_events.get(same)
            if posted is not None:
                posted[1] += 1
                self._posted_events.move_to_end(same)
                name, count = posted
        if posted is not None:
            try:
                return self.patch("events", ns, name, {"count": count, "lastTimestamp": objects.timestamp(self.clock.wall())},
                                  copy=False)
            except ApiError:  # expired or deleted: the repeat is a new Event
                pass
        body = objects.event_body(involved, reason, message, type, component, self.clock.wall(), self._rng)
        try:
            stored = self.create("events", ns, body, copy=False)
        except ApiError:  # namespace terminating: events are best-effort, as on a real cluster
            return body
        with self._lock:
            self._posted_events[same] = [stored["metadata"]["name"], 1]
            if len(self._posted_events) > 4096:
                self._posted_events.popitem(last=False)
        return stored


def _key(obj: dict) -> tuple[str, str]:
    md = obj["metadata"]
    return md.get("namespace", ""), md["name"]
