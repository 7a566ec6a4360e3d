"""Store changes → in-process subscribers (scheduler, kubelet, controllers, the GPU side), in order.

Subscribers run on the thread that made the change, after the store's lock is released.  A
change made *by* a subscriber is queued behind the current ones, so every subscriber sees one
total order of events.  What a subscriber is handed shares its contents with the stored object
(a copy per subscriber per event made every kubelet of a multi-node twin copy every pod): it
reads it, and copies what it wants to change.  A failing subscriber is logged and skipped: a broken controller must not
turn a client's successful write into an error, nor stop the others.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

Subscriber = Callable[[str, dict], None]
AnySubscriber = Callable[[str, str, dict], None]  # (resource key, event type, object)


class Dispatcher:
    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock  # the store's: the queue is filled under it
        self._subs: dict[str, list[Subscriber]] = {}
        self._any: list[AnySubscriber] = []
        self._pending: deque[tuple[str, str, dict]] = deque()
        self._running = threading.RLock()
        self._local = threading.local()

    def subscribe(self, resource: str, fn: Subscriber) -> Callable[[], None]:
        with self._lock:
            self._subs.setdefault(resource, []).append(fn)

        def unsubscribe() -> None:
            with self._lock:
                if fn in self._subs.get(resource, []):
                    self._subs[resource].remove(fn)
        return unsubscribe

    def subscribe_all(self, fn: AnySubscriber) -> None:
        """Every change to every resource (the garbage collector's view), before the
        per-resource subscribers of that change."""
        with self._lock:
            self._any.append(fn)

    def queue(self, resource: str, etype: str, obj: dict) -> None:
        """Called under the store's lock for every committed change."""
        self._pending.append((resource, etype, obj))

    def drain(self, render: Callable[[str, dict], Any]) -> None:
        """Deliver queued events; `render(resource, obj)` is what each subscriber is handed."""
        if getattr(self._local, "active", False):
            return  # a subscriber's own write: the outer loop delivers it next
        with self._running:
            self._local.active = True
            try:
                while True:
                    with self._lock:
                        if not self._pending:
                            return
                        resource, etype, obj = self._pending.popleft()
                        subs: list[Subscriber] = [functools.partial(f, resource) for f in self._any]
                        subs += self._subs.get(resource, ())
                    for fn in subs:
                        try:
                            fn(etype, render(resource, obj))
                        except Exception:
                            log.exception("store subscriber %r failed on %s %s", fn, etype, resource)
            finally:
                self._local.active = False
