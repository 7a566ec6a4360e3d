"""The reference Power Agent the twin runs in the agent DaemonSet pod (contract §3).

`policy` (conflict / safe-default rules per generation), `actuators` (NVML, DCGM), `metrics`
(Prometheus), `state` (persisted managed set), `agent` (the reconcile loop), `cli` (the container
command line) and `workload` (the pod's life: start, 15 s ticks, SIGTERM, exec, port 9100).
"""

from .agent import (
    RECONCILE_INTERVAL_S,
    AgentConfig,
    PodListError,
    PowerAgent,
    pod_uid_from_cgroup,
)
from .policy import ANNOTATION, GENERATIONS

__all__ = [
    "ANNOTATION",
    "GENERATIONS",
    "RECONCILE_INTERVAL_S",
    "AgentConfig",
    "PodListError",
    "PowerAgent",
    "pod_uid_from_cgroup",
]
