"""ownerReferences → garbage collection for every kind, as the controller-manager's collector does.

- Background: once none of an object's owners exists any more (gone, or the name now has
  another uid), the object is deleted; one that still has a live owner only loses the dead
  references. An object created with only dead owners is collected the same way.
- Foreground: an owner being deleted with the `foregroundDeletion` finalizer has its dependents
  deleted — those whose reference says `blockOwnerDeletion` in the foreground too, so the
  chain cascades — and keeps the finalizer (and so exists, `deletionTimestamp` set) until no
  blocking dependent is left.
- Orphan: an owner being deleted with the `orphan` finalizer has its reference removed from
  every dependent, then loses the finalizer; the dependents stay.

The collector sees every change through `store.subscribe_all` and keeps one index, owner uid →
its dependents; owners are looked up by the reference's apiVersion/kind/name, as the real
collector does (an owner of a kind the server does not serve counts as alive: never guess).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .apiserver.errors import ApiError

log = logging.getLogger(__name__)
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


@dataclass(frozen=True)
class Dependent:
    resource: str
    namespace: str | None
    name: str
    uid: str
    blocks: bool  # its reference to the owner has blockOwnerDeletion


class GarbageCollector:
    def __init__(self, store: Any) -> None:
        self.store = store
        self._dependents: dict[str, dict[str, Dependent]] = {}  # owner uid → dependent uid → Dependent
        self._refs: dict[str, tuple[str, ...]] = {}              # dependent uid → owner uids
        self._waiting: dict[str, tuple[str, str | None, str]] = {}  # foreground owners: uid → where
        store.subscribe_all(self._on_change)

    # -- events ---------------------------------------------------------------------------
    def _on_change(self, resource: str, etype: str, obj: dict) -> None:
        md = obj["metadata"]
        uid = md.get("uid")
        if not uid:
            return
        owners = self._refs.get(uid, ())
        if etype == "DELETED":
            self._unindex(uid)
            self._waiting.pop(uid, None)
            for dep in list(self._dependents.get(uid, {}).values()):
                self._collect_if_orphaned(dep)
            for owner in owners:
                if owner in self._waiting:
                    self._foreground(owner)
            return
        self._index(resource, obj)
        finalizers = md.get("finalizers") or []
        if md.get("deletionTimestamp") and ORPHAN in finalizers:
            self._orphan(resource, obj)
        elif md.get("deletionTimestamp") and FOREGROUND in finalizers:
            self._waiting[uid] = (resource, md.get("namespace"), md["name"])
            self._foreground(uid)
        elif etype == "ADDED" and md.get("ownerReferences"):
            self._collect_if_orphaned(self._as_dependent(resource, obj, None))

    def _index(self, resource: str, obj: dict) -> None:
        md = obj["metadata"]
        uid = md["uid"]
        refs = [r for r in md.get("ownerReferences") or [] if r.get("uid")]
        self._unindex(uid)
        if not refs:
            return
        self._refs[uid] = tuple(r["uid"] for r in refs)
        for ref in refs:
            self._dependents.setdefault(ref["uid"], {})[uid] = self._as_dependent(resource, obj, ref)

    def _unindex(self, uid: str) -> None:
        for owner in self._refs.pop(uid, ()):
            deps = self._dependents.get(owner)
            if deps is not None:
                deps.pop(uid, None)
                if not deps:
                    del self._dependents[owner]

    @staticmethod
    def _as_dependent(resource: str, obj: dict, ref: dict | None) -> Dependent:
        md = obj["metadata"]
        return Dependent(resource, md.get("namespace"), md["name"], md["uid"],
                         bool(ref and ref.get("blockOwnerDeletion")))

    # -- background -----------------------------------------------------------------------
    def _current(self, dep: Dependent) -> dict | None:
        try:
            obj = self.store.get(dep.resource, dep.namespace, dep.name, copy=False)  # read, never changed
        except ApiError:
            return None
        return obj if obj["metadata"]["uid"] == dep.uid else None

    def _owner_alive(self, ref: dict, namespace: str | None) -> bool:
        rtype = self.store.types.by_kind(ref.get("apiVersion", ""), ref.get("kind", ""))
        if rtype is None:
            return True
        try:
            owner = self.store.get(rtype, namespace if rtype.namespaced else None, ref.get("name", ""), copy=False)
        except ApiError:
            return False
        return owner["metadata"]["uid"] == ref.get("uid")

    def _collect_if_orphaned(self, dep: Dependent) -> None:
        obj = self._current(dep)
        if obj is None:
            return
        refs = obj["metadata"].get("ownerReferences") or []
        alive = [r for r in refs if self._owner_alive(r, dep.namespace)]
        if len(alive) == len(refs):
            return
        try:
            if alive:
                self.store.patch(dep.resource, dep.namespace, dep.name, {"metadata": {"ownerReferences": alive}},
                                 copy=False)
            elif obj["metadata"].get("deletionTimestamp") is None:
                self.store.delete(dep.resource, dep.namespace, dep.name, copy=False)
        except ApiError as exc:
            if exc.code != 404:
                log.warning("garbage collector: %s %s/%s: %s", dep.resource, dep.namespace, dep.name, exc.message)

    # -- foreground and orphan ------------------------------------------------------------
    def _foreground(self, owner_uid: str) -> None:
        resource, namespace, name = self._waiting[owner_uid]
        for dep in list(self._dependents.get(owner_uid, {}).values()):
            obj = self._current(dep)
            if obj is not None and obj["metadata"].get("deletionTimestamp") is None:
                try:
                    self.store.delete(dep.resource, dep.namespace, dep.name,
                                      propagation="Foreground" if dep.blocks else "Background", copy=False)
                except ApiError as exc:
                    if exc.code != 404:
                        raise
        if not any(self._current(d) for d in list(self._dependents.get(owner_uid, {}).values()) if d.blocks):
            self._waiting.pop(owner_uid, None)
            self._drop_finalizer(resource, namespace, name, owner_uid, FOREGROUND)

    def _orphan(self, resource: str, owner: dict) -> None:
        md = owner["metadata"]
        for dep in list(self._dependents.get(md["uid"], {}).values()):
            obj = self._current(dep)
            if obj is None:
                continue
            refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid") != md["uid"]]
            try:
                self.store.patch(dep.resource, dep.namespace, dep.name, {"metadata": {"ownerReferences": refs or None}})
            except ApiError as exc:
                if exc.code != 404:
                    raise
        self._drop_finalizer(resource, md.get("namespace"), md["name"], md["uid"], ORPHAN)

    def _drop_finalizer(self, resource: str, namespace: str | None, name: str, uid: str, finalizer: str) -> None:
        try:
            obj = self.store.get(resource, namespace, name)
        except ApiError:
            return
        finalizers = obj["metadata"].get("finalizers") or []
        if obj["metadata"]["uid"] != uid or finalizer not in finalizers:
            return
        rest = [f for f in finalizers if f != finalizer]
        self.store.patch(resource, namespace, name, {"metadata": {"finalizers": rest or None}})
