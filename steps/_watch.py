"""A list, then a watch that survives what a watch meets: every object of a kind → each change
to them, for as long as asked.

A watch is one long HTTP response. It ends when the server says so (its timeout, a restart, a
proxy cutting idle streams), a connection breaks, or the server answers 410 Gone because the
resourceVersion it should resume from was compacted away. As client-go's reflector does, a watch
that ended is opened again from the last resourceVersion seen, so no change is missed or seen
twice; after a 410 the objects are listed again and the watch resumes from that list's version
(the caller learns it by a `RELISTED` event carrying the whole list, as a reflector's Replace).
The kubernetes client's own `Watch.stream` retries a 410 once from the same, still expired,
version and then raises; it never lists again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from ._clients import RetryPolicy, _api_exception, _transport_error, api_error, reraise_interrupt, transient_delay

RELISTED = "RELISTED"
GONE = 410
#: One watch request at most this long (the server may end it sooner); then it is opened again.
WINDOW_S = 60


def list_and_watch(
    list_func: Callable[..., Any],
    *args: Any,
    timeout_s: float,
    sleep: Callable[[float], None] = time.sleep,
    policy: RetryPolicy | None = None,
    **kwargs: Any,
) -> Iterator[tuple[str, Any]]:
    """(`RELISTED`, [objects]) first, then (ADDED|MODIFIED|DELETED, object) for every change, until
    `timeout_s` wall-clock seconds have passed (or the caller stops iterating).

    `list_func` is a list call of the official client (`CoreV1Api.list_namespaced_pod` …) with
    its arguments. Transient faults of a watch request back off on `sleep` (the target's clock)
    and are bounded by `policy` between two events; refusals are raised as ClusterError."""
    from kubernetes import watch  # on first use, as every use of the client (see _clients)

    policy = policy or RetryPolicy()
    deadline = time.monotonic() + timeout_s
    version: str | None = None
    faults = 0
    while (remaining := deadline - time.monotonic()) > 0:
        if version is None:
            listed = list_func(*args, **kwargs)
            version = listed.metadata.resource_version
            yield RELISTED, list(listed.items)
            continue
        stream = watch.Watch()
        try:
            for event in stream.stream(list_func, *args, resource_version=version,
                                       timeout_seconds=max(1, int(min(remaining, WINDOW_S))), **kwargs):
                faults = 0
                obj = event["object"]
                version = _version(obj) or version
                if event["type"] != "BOOKMARK":
                    yield event["type"], obj
                if time.monotonic() >= deadline:
                    return
        except _api_exception() as exc:
            reraise_interrupt(exc)
            if exc.status == GONE:
                version = None  # compacted away: list again
                continue
            delay = transient_delay(exc, faults, policy)
            if delay is None or faults + 1 >= policy.attempts:
                raise api_error(exc) from exc
            faults += 1
            sleep(delay)
        except (_transport_error(), ConnectionError, TimeoutError):
            if faults + 1 >= policy.attempts:
                raise
            faults += 1
            sleep(policy.backoff(faults))
        finally:
            stream.stop()


def _version(obj: Any) -> str | None:
    metadata = obj.get("metadata") if isinstance(obj, dict) else getattr(obj, "metadata", None)
    if isinstance(metadata, dict):
        return metadata.get("resourceVersion")
    return getattr(metadata, "resource_version", None)
