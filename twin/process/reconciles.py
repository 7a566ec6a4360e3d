"""How long a real agent program's ticks last on the twin's clock, measured from its pod LISTs.

Every Power Agent version starts a reconcile with one LIST of the pods on its node
(`fieldSelector=spec.nodeName=<node>`), works through the GPUs, and then waits its hard-coded
15 s: its tick is the wait *plus* the reconcile's own work. The in-process agent's work takes no
virtual time, so its tick is exactly 15 s; a real program's work takes real time, and on the
scaled clock `rate` times its wall time (a 140 ms reconcile is 3.5 twin seconds at 25×). So a
change made just after one LIST reaches a GPU only at the next reconcile's write, up to
15 s + two reconciles later, and "within 1 agent tick" must mean that to the scenario too.

`ReconcileTicks` records, per node, when each such LIST of the node's agent arrives (made with a
pod's service-account token; the kubeconfig's admin requests — the steps' own LISTs — are not an
agent's) and reports the reconciles of the last few ticks (the time between two LISTs beyond the
wait): the typical one, which makes a tick's length, and the longest, which bounds how late a
tick's change can land. An agent container's start and end break the series, so the gap of a
restart is never taken for a tick, while the reconciles before it still count for the next
container's first ticks.
"""

from __future__ import annotations

import base64
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
    """The agents' LIST instants on `clock`, per node → the recent reconciles of that node's agent."""

    def __init__(self, clock: Any, wait_seconds: float = AGENT_WAIT_SECONDS, recent: int = RECENT_TICKS) -> None:
        self.clock = clock
        self.wait_seconds = wait_seconds
        self._recent_count = recent
        self._last: dict[str, float | None] = {}
        self._recent: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def listed(self, node: str, at: float | None = None) -> None:
        """The agent on `node` began a reconcile: it LISTed that node's pods."""
        now = self.clock.now() if at is None else at
        with self._lock:
            last = self._last.get(node)
            if last is not None:
                self._recent.setdefault(node, deque(maxlen=self._recent_count)).append(max(0.0, now - last - self.wait_seconds))
            self._last[node] = now

    def restarted(self, node: str) -> None:
        """The node's agent container started or ended: the time around it is start-up or absence,
        not a tick (the ticks before it still say what a reconcile costs on this machine)."""
        with self._lock:
            self._last[node] = None

    def reconciles(self) -> list[float]:
        """The recent reconciles of every node's agent, in seconds (each tick beyond the wait)."""
        with self._lock:
            return [r for found in self._recent.values() for r in found]

    def typical_seconds(self) -> float:
        """The median recent reconcile: what one tick lasts beyond the wait (0 before two LISTs)."""
        found = self.reconciles()
        return statistics.median(found) if found else 0.0

    def longest_seconds(self) -> float:
        """The longest recent reconcile (0 before two LISTs)."""
        return max(self.reconciles(), default=0.0)

    def middleware(self, authenticate: Callable[[str | None], Any]) -> Callable[..., Any]:
        """An aiohttp middleware of the API server that calls `listed` for an agent's pod LIST."""
        from aiohttp import web

        @web.middleware
        async def watch_lists(request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
            selector = request.query.get("fieldSelector", "")
            if (request.method == "GET" and _POD_LIST.fullmatch(request.path) and selector.startswith("spec.nodeName=")
                    and request.query.get("watch", "").lower() not in ("1", "true")
                    and _pod_of(request.headers.get("Authorization"), authenticate) is not None):
                self.listed(selector.removeprefix("spec.nodeName=").split(",")[0])
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
    payload = (authorization or "").strip().partition(" ")[2].strip().split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    pod = (claims.get("kubernetes.io") or {}).get("pod") or {}
    return pod.get("uid") or user.name
