"""LIST pages → one consistent snapshot per paged list, as the real server serves them.

The first page of a `limit`ed list freezes the matching items at that resourceVersion; every
`continue` token names the snapshot and the next offset, so later pages show the list as it was
(objects created or deleted meanwhile neither appear nor vanish). A token whose version is older
than the compaction window is 410 Expired, as on a real server.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import OrderedDict
from typing import Any

from .errors import ApiError
from .watch import COMPACTION_SECONDS

MAX_SNAPSHOTS = 64  # paged lists in flight; the oldest is dropped first

EXPIRED = ("The provided continue parameter is too old to display a consistent list result. You can start a new "
           "list without the continue parameter.")


class ListSnapshots:
    def __init__(self, clock: Any) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._snaps: OrderedDict[str, tuple[float, list[str]]] = OrderedDict()
        self._next = 0

    def keep(self, rv: str, items: list[str]) -> str:
        """Freeze `items` (encoded) listed at `rv`; returns the snapshot's key."""
        with self._lock:
            self._next += 1
            key = f"{rv}-{self._next}"
            self._snaps[key] = (self._clock.now(), items)
            while len(self._snaps) > MAX_SNAPSHOTS:
                self._snaps.popitem(last=False)
            return key

    def token(self, key: str, rv: str, start: int) -> str:
        return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": start, "snap": key}).encode()).decode()

    def resume(self, token: str) -> tuple[str, int, str, list[str]]:
        """A continue token → (resourceVersion, next offset, snapshot key, the frozen items)."""
        try:
            data = json.loads(base64.urlsafe_b64decode(token))
            rv, start, key = str(data["rv"]), int(data["start"]), str(data["snap"])
        except (ValueError, KeyError, TypeError):
            raise ApiError(400, "continue key is not valid: incorrect encoded start resourceVersion",
                           "BadRequest") from None
        with self._lock:
            snap = self._snaps.get(key)
        if snap is None or self._clock.now() - snap[0] > COMPACTION_SECONDS:
            raise ApiError(410, EXPIRED, "Expired")
        return rv, start, key, snap[1]
