"""Helpers for the process-container tests: the tiny program, pod manifests, waiting in real time."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

TINY = Path(__file__).with_name("tiny_program.py")


def tiny_pod(name: str, *, env: dict[str, str] | None = None, args: list[str] | None = None,
             restart: str = "Never", extra_env: list[dict] | None = None, **spec: Any) -> dict:
    container: dict[str, Any] = {"name": "main", "image": "tiny:1",
                                 "env": [{"name": k, "value": v} for k, v in (env or {}).items()] + (extra_env or [])}
    if args is not None:
        container["args"] = args
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [container], "restartPolicy": restart, **spec}}


def eventually(check: Callable[[], Any], timeout: float = 15.0, what: str = "the condition") -> Any:
    """Poll `check` until it returns something truthy (real time: the program runs in it)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (AssertionError, ApiException) as exc:  # not yet: e.g. logs of a container still being created
            last = exc
        else:
            if last:
                return last
        time.sleep(0.02)
    raise AssertionError(f"{what} did not hold within {timeout} s; last seen: {last!r}")


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False
