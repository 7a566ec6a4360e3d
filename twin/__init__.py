"""The embedded twin of a GPU cluster; it imports nothing of stepgraph.

`Twin` wires one cluster together — clock, store, API server, one or more nodes (each with its
host process table, device plugin and kubelet), scheduler, controllers — and is the only object
callers need:

    with Twin(seed=3) as twin:
        kubernetes.config.load_kube_config(twin.kubeconfig_path)
        ...                     # the official client, over HTTP on loopback
        twin.clock.sleep(5)     # virtual time: pods start, agents tick

The GPU side installs itself through `hooks` (or `world`): each is called with the twin after the
cluster exists and before the API server accepts requests, and may register workloads
(`twin.workloads`), subscribe to the store, or arm timers on the clock.

`nodes=[NodeConfig(...), ...]` makes a cluster of several nodes; `twin.node`, `twin.host`,
`twin.inventory` and `twin.kubelet` are the first node's, `twin.nodes` / `twin.kubelets` all of them.
"""

from __future__ import annotations

# One identity: this folder is the package stepgraph.twin. Imported by its folder name (say
# `import twin` from the checkout) it would be a second copy with its own registries and state.
if __name__ != "stepgraph.twin":
    raise ImportError(f"twin/ is the package stepgraph.twin; import it by that name, not as {__name__!r}")

from typing import TYPE_CHECKING, Any

from .clock import RealTimeClock, VirtualClock
from .node import NodeConfig

if TYPE_CHECKING:
    from .cluster import Twin

__all__ = ["NodeConfig", "RealTimeClock", "Twin", "VirtualClock"]


def __getattr__(name: str) -> Any:
    # `Twin` pulls in the API server, aiohttp and every controller: loaded at first use, so a
    # program that needs one small module of the twin (the reference agent run as a process
    # imports only its own modules and the DCGM model) starts without them.
    if name == "Twin":
        from .cluster import Twin
        return Twin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
