"""Agent events → the Prometheus metrics of contract §3.5, in a per-agent registry.

Each agent process owns one `CollectorRegistry` (two agents in one twin process must not share
series, and a restarted agent starts from zero as a new process would). Rendering is
`generate_latest`, i.e. the exposition format the live test scrapes from port 9100.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

PREFIX = "dynamo_power_agent_"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class AgentMetrics:
    def __init__(self, with_enforce_counter: bool = True, counting_disabled: Callable[[], bool] = lambda: False) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.applied_limit_watts = Gauge(
            PREFIX + "applied_limit_watts", "Cap last written to the GPU (effective watts)", ["gpu"], registry=r
        )
        self._counters = {
            "multi_pod_gpu_total": Counter(
                PREFIX + "multi_pod_gpu", "GPUs seen with more than one pod", ["disposition"], registry=r
            ),
            "apply_failures_total": Counter(PREFIX + "apply_failures", "Actuator writes that raised", registry=r),
            "safe_default_applied_total": Counter(
                PREFIX + "safe_default_applied", "Safe default used (conflict or bad annotation)", registry=r
            ),
            "cap_clamped_total": Counter(
                PREFIX + "cap_clamped", "Requested caps clamped to the SKU range", ["direction"], registry=r
            ),
            "k8s_list_failures_total": Counter(
                PREFIX + "k8s_list_failures", "Pod list failures (cycle skipped)", registry=r
            ),
        }
        if with_enforce_counter:  # PA-late dropped it with Enforce
            self._counters["dcgm_enforce_failures_total"] = Counter(
                PREFIX + "dcgm_enforce_failures", "dcgmConfigEnforce failures after a good Set", registry=r
            )
        self._counting_disabled = counting_disabled  # the `agent_never_counts` bug

    # Counters the `agent_never_counts` bug suppresses: the policy's own bookkeeping.
    _POLICY_COUNTERS = frozenset({"multi_pod_gpu_total", "safe_default_applied_total", "cap_clamped_total"})

    def inc(self, name: str, labels: tuple[tuple[str, str], ...] = ()) -> None:
        if name in self._POLICY_COUNTERS and self._counting_disabled():
            return
        counter = self._counters.get(name)
        if counter is None:
            return
        (counter.labels(**dict(labels)) if labels else counter).inc()

    def set_applied(self, gpu: int, watts: int) -> None:
        self.applied_limit_watts.labels(gpu=str(gpu)).set(watts)

    def render(self) -> bytes:
        return generate_latest(self.registry)
