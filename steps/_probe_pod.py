"""A probe run in a pod of its own on the test node, for readings taken while no Power Agent pod
runs to exec into (the agent was stopped: C2).

The pod runs the probe as its program (`python3 -c <probe>`, every GPU visible, as root, in the
agent's own image, which has pynvml), the probe's output is its log, and the pod is deleted at once
afterwards — also when the reading fails — so nothing is left behind.
"""

from __future__ import annotations

import uuid
from typing import Any

from stepgraph.dsl import CheckFailed, StepContext

from . import probes
from ._clients import ExecError, NotFound, translated
from ._cluster import Cluster

PROBE_POD_LABELS = {"purpose": "power-aware-multi-dgd-test-probe"}
PROBE_DEADLINE_S = 120.0


def probe_pod_body(c: Cluster, name: str, probe: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": c.namespace, "labels": dict(PROBE_POD_LABELS)},
        "spec": {"nodeName": c.node, "restartPolicy": "Never",
                 "containers": [{"name": "probe", "image": image, "command": probes.argv(probe),
                                 "securityContext": {"runAsUser": 0},
                                 "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]},
    }


def run_in_probe_pod(ctx: StepContext, c: Cluster, probe: str, image: str) -> str:
    """The stdout of `probe` run as the program of a one-off pod on the test node."""
    name = f"stepgraph-probe-{uuid.uuid4().hex[:8]}"
    with translated(f"create probe pod {c.namespace}/{name}"):
        c.core.create_namespaced_pod(c.namespace, probe_pod_body(c, name, probe, image))
    try:
        def ended() -> str:
            phase = c.pod(name).status.phase
            if phase not in ("Succeeded", "Failed"):
                raise CheckFailed(f"probe pod {name} finished", expected="Succeeded", observed=phase)
            return str(phase)

        phase = ctx.eventually(ended, PROBE_DEADLINE_S, description=f"probe pod {name} finished")
        with translated(f"read log of probe pod {name}"):
            log = c.core.read_namespaced_pod_log(name, c.namespace)
        if phase != "Succeeded":
            raise ExecError(f"probe {probe} in pod {name} failed: " + " | ".join((log or "").strip().splitlines()[-5:]))
        return str(log or "")
    finally:
        try:
            with translated(f"delete probe pod {name}"):
                c.core.delete_namespaced_pod(name, c.namespace, grace_period_seconds=0)
        except NotFound:
            pass
