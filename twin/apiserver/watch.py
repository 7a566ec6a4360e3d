"""Store changes → watch streams: per-watch filtering and a bounded history to resume from.

A watcher sees what a real API server would show it: events for its resource and namespace
that match its selectors, with an object that leaves the selection reported as DELETED and one
that enters it as ADDED.  `WatchHub` is driven under the store's lock, so history replay and
live events never interleave or skip.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from .errors import ApiError, bad_request
from .resources import ResourceType
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



# How long a resourceVersion can be resumed from: the real server compacts etcd every 5 minutes,
# after which a watch (or a continue token) from an older version is 410 Expired.
COMPACTION_SECONDS = 300.0


class WatchHub:
    """The open watchers and the recent history (the store calls it under its lock): at most
    `history` events, and none older than COMPACTION_SECONDS on `clock`."""

    def __init__(self, history: int, clock: Any = None) -> None:
        self._history: deque[Event] = deque(maxlen=history)
        self._times: deque[float] = deque(maxlen=history)
        self._watchers: set[Watcher] = set()
        self._clock = clock

    def _compact(self) -> None:
        if self._clock is None:
            return
        horizon = self._clock.now() - COMPACTION_SECONDS
        while self._times and self._times[0] < horizon:
            self._times.popleft()
            self._history.popleft()

    def record(self, event: Event) -> None:
        self._compact()
        self._history.append(event)
        self._times.append(self._clock.now() if self._clock is not None else 0.0)
        for w in list(self._watchers):
            if w.rtype.key == event[1]:
                _offer(w, event)

    def open(self, watcher: Watcher, resource_version: str | None, current: list[dict], now_rv: int) -> None:
        if resource_version in (None, "", "0"):
            for obj in current:
                watcher.offer("ADDED", None, obj)
        else:
            try:
                since = int(resource_version)
            except ValueError:
                raise bad_request(f"invalid resource version: {resource_version!r}") from None
            self._compact()
            oldest = self._history[0][0] if self._history else now_rv + 1
            if since < oldest - 1 and since < now_rv:
                raise ApiError(410, f"too old resource version: {since} ({oldest - 1})", "Expired")
            for event in self._history:
                if event[0] > since and event[1] == watcher.rtype.key:
                    _offer(watcher, event)
        self._watchers.add(watcher)

    def close(self, watcher: Watcher) -> None:
        watcher.close()
        self._watchers.discard(watcher)


def _offer(watcher: Watcher, event: Event) -> None:
    _, _, etype, old, new = event
    if etype == "DELETED":  # `new` is the last state; a DELETED has no "after"
        watcher.offer("DELETED", new, None)
    else:
        watcher.offer(etype, old, new)
