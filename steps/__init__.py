"""Our step libraries, and the public API for writing your own.

A step library of your own imports the language (`given`/`when`/`then`, `Params`, `StepContext`,
`CheckFailed`, units) from `stepgraph.dsl` and reaches the cluster through the names below, never
through the private modules (`stepgraph.steps._cluster`, `._clients`):

- `cluster(ctx)` → the session's `Cluster`: `core` / `custom` API clients, `namespace`, `node`,
  `pods(selector)`, `pod(name)`, `the_pod(selector, what)`, `exec(pod, argv)` → `ExecResult`
  (`stdout`, `stderr`, `exit_code`; `.check(what)` raises `ExecError` unless it exited 0), and
  `run.mark(metadata)` to stamp an object it creates as this run's;
- the error family: `ClusterError` ⊃ `CredentialsError`, `ExecError`, `ApiError` ⊃ `NotFound`,
  `Conflict`, `Forbidden`, `Invalid`; `translated(what)` turns the kubernetes client's exceptions
  inside it into these.

The names load on first use, so importing a step library's package costs no kubernetes import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# One identity: this folder is the package stepgraph.steps. Imported by its folder name (say
# `import steps` from the checkout) it would be a second copy with its own registries and state.
if __name__ != "stepgraph.steps":
    raise ImportError(f"steps/ is the package stepgraph.steps; import it by that name, not as {__name__!r}")

if TYPE_CHECKING:
    from ._clients import (
        ApiError,
        ClusterError,
        Conflict,
        CredentialsError,
        ExecError,
        ExecResult,
        Forbidden,
        Invalid,
        NotFound,
        translated,
    )
    from ._cluster import Cluster, RunStamp, cluster

_PUBLIC = {
    "Cluster": "._cluster",
    "RunStamp": "._cluster",
    "cluster": "._cluster",
    "ApiError": "._clients",
    "ClusterError": "._clients",
    "Conflict": "._clients",
    "CredentialsError": "._clients",
    "ExecError": "._clients",
    "ExecResult": "._clients",
    "Forbidden": "._clients",
    "Invalid": "._clients",
    "NotFound": "._clients",
    "translated": "._clients",
}
__all__ = [
    "ApiError",
    "Cluster",
    "ClusterError",
    "Conflict",
    "CredentialsError",
    "ExecError",
    "ExecResult",
    "Forbidden",
    "Invalid",
    "NotFound",
    "RunStamp",
    "cluster",
    "translated",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'stepgraph.steps' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value
