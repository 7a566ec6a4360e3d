"""How long a real agent program's ticks last on the twin's clock, measured from its pod LISTs.

Every Power Agent version starts a reconcile with one LIST of the pods on its node
(`fieldSelector=spec.nodeName=<node>`), works through the GPUs, and then waits its hard-coded
15 s: its tick is the wait *plus* the reconcile's own work. The in-process agent's work takes no
virtual time, so its tick is exactly 15 s; a real program's work takes real time, and on the
scaled clock `rate` times its wall time (a 140 ms reconcile is 3.5 twin seconds at 25×). So a
change made just after one LIST reaches a GPU only at the next reconcile's write, up to
15 s + two reconciles later, and "within 1 agent tick" must mean that to the scenario too.

`ReconcileTicks` records, per agent container, when each such LIST arrives (the service-account
token of the pod tells whose it is; the kubeconfig's admin requests — the steps' own LISTs — are
not an agent's) and reports the reconciles of the last few ticks (the time between two LISTs
beyond the wait): the typical one, which makes a tick's length, and the longest, which bounds how
late a tick's change can land. A container's start and end drop its history, so the gap of a
restart is never taken for a tick.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import statistics
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

#: The agents' fixed wait between reconciles (every version's RECONCILE_INTERVAL_S).
AGENT_WAIT_SECONDS = 15.0
#: Ticks the estimate looks back over: long enough to see a slow tick, short enough to follow load.
RECENT_TICKS = 5

_POD_LIST = re.compile(r"/api/v1(/namespaces/[^/]+)?/pods/?")


class ReconcileTicks:
    """The agent containers' LIST instants on `clock` → their recent reconcile time."""

    def __init__(self, clock: Any, wait_seconds: float = AGENT_WAIT_SECONDS, recent: int = RECENT_TICKS) -> None:
        self.clock = clock
        self.wait_seconds = wait_seconds
        self._recent = recent
        self._lists: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def listed(self, agent: str, at: float | None = None) -> None:
        """Agent container `agent` (its pod's UID) began a reconcile: it LISTed its node's pods."""
        with self._lock:
            self._lists.setdefault(agent, deque(maxlen=self._recent + 1)).append(self.clock.now() if at is None else at)

    def forget(self, agent: str) -> None:
        """The container started or ended: the time around it is start-up or absence, not a tick."""
        with self._lock:
            self._lists.pop(agent, None)

    def reconciles(self) -> list[float]:
        """The recent reconciles of every running agent container, in seconds (each tick beyond the wait)."""
        with self._lock:
            gaps = [b - a for times in self._lists.values() for a, b in itertools.pairwise(times)]
        return [max(0.0, gap - self.wait_seconds) for gap in gaps]

    def typical_seconds(self) -> float:
        """The median recent reconcile: what one tick lasts beyond the wait (0 before two LISTs)."""
        found = self.reconciles()
        return statistics.median(found) if found else 0.0

    def longest_seconds(self) -> float:
        """The longest recent reconcile (0 before two LISTs of one container)."""
        return max(self.reconciles(), default=0.0)

    def middleware(self, authenticate: Callable[[str | None], Any]) -> Callable[..., Any]:
        """An aiohttp middleware of the API server that calls `listed` for an agent's pod LIST."""
        from aiohttp import web

        @web.middleware
        async def watch_lists(request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
            if (request.method == "GET" and _POD_LIST.fullmatch(request.path)
                    and request.query.get("fieldSelector", "").startswith("spec.nodeName=")
                    and request.query.get("watch", "").lower() not in ("1", "true")):
                agent = _pod_of(request.headers.get("Authorization"), authenticate)
                if agent is not None:
                    self.listed(agent)
            return await handler(request)
        return watch_lists


def _pod_of(authorization: str | None, authenticate: Callable[[str | None], Any]) -> str | None:
    """The UID of the pod whose service-account token made the request (None for anyone else)."""
    try:
        user = authenticate(authorization)
    except Exception:  # the server itself answers a bad token with its 401
        return None
    if getattr(user, "service_account", None) is None:
        return None
    payload = (authorization or "").removeprefix("Bearer ").strip().split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    pod = (claims.get("kubernetes.io") or {}).get("pod") or {}
    return pod.get("uid") or user.name
