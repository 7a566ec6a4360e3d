"""A DGD's planner pod → per-tick power annotations on its own worker pods (contract §4).

One planner per DynamoGraphDeployment. Each tick (`throughput_adjustment_interval_seconds` from
its `--config` JSON) it runs the PREFILL branch (disagg only) and the DECODE branch: select the
DGD's worker pods by `nvidia.com/dynamo-graph-deployment-name=<dgd>,nvidia.com/dynamo-component=
<service key>`, patch `dynamo.nvidia.com/gpu-power-limit` only where the value differs, and log
`Annotated pod <pod> with dynamo.nvidia.com/gpu-power-limit=<W>` — the line test T3 greps.
Its power gauges are served on port 9085.

Generations: `pod-patching` (the #9683 planner the live test targets) and `dgd-owned` (caps live
in the DGD's pod template; the operator renders them; this planner only reads them to project
power and never patches a pod).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from prometheus_client import CollectorRegistry, Gauge, generate_latest

from .faults import Faults
from .power_agent.policy import ANNOTATION
from .workloads import ExecResult, HttpResponse, Workload, WorkloadContext, run_builtin

DGD_RESOURCE = "dynamographdeployments.nvidia.com"
DGD_LABEL = "nvidia.com/dynamo-graph-deployment-name"
COMPONENT_LABEL = "nvidia.com/dynamo-component"
COMPONENT_TYPE_LABEL = "nvidia.com/dynamo-component-type"
PLANNER_METRICS_PORT = 9085
PlannerGeneration = Literal["pod-patching", "dgd-owned"]
PLANNER_GENERATIONS = ("pod-patching", "dgd-owned")
_MODES = ("disagg", "prefill", "decode", "agg")


class PlannerConfigError(ValueError):
    """The planner's `--config` would make `dynamo.planner` exit at start."""


@dataclass(frozen=True)
class PlannerConfig:
    mode: str
    enable_power_awareness: bool = False
    prefill_engine_gpu_power_limit: int | None = None
    decode_engine_gpu_power_limit: int | None = None
    total_gpu_power_limit: int | None = None
    interval_s: float = 60.0

    @classmethod
    def from_args(cls, argv: list[str]) -> PlannerConfig:
        raw = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--config"), None)
        if raw is None:
            raw = next((a.split("=", 1)[1] for a in argv if a.startswith("--config=")), "{}")
        try:
            data: dict[str, Any] = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise PlannerConfigError(f"--config is not JSON: {exc}") from None
        mode = data.get("mode")
        if mode not in _MODES:  # PlannerConfig.mode is a required Literal upstream
            raise PlannerConfigError(f"--config mode must be one of {', '.join(_MODES)}, got {mode!r}")
        return cls(
            mode=mode,
            enable_power_awareness=bool(data.get("enable_power_awareness", False)),
            prefill_engine_gpu_power_limit=data.get("prefill_engine_gpu_power_limit"),
            decode_engine_gpu_power_limit=data.get("decode_engine_gpu_power_limit"),
            total_gpu_power_limit=data.get("total_gpu_power_limit"),
            interval_s=float(data.get("throughput_adjustment_interval_seconds", 60)),
        )

    def branches(self, faults: Faults) -> list[tuple[str, int | None]]:
        """(sub-component, limit) pairs this planner runs, in order: PREFILL then DECODE."""
        prefill = ("prefill", self.prefill_engine_gpu_power_limit)
        decode = ("decode", self.decode_engine_gpu_power_limit)
        if self.mode == "agg":  # AggPlanner: require_prefill=False, require_decode=True
            return [prefill, decode] if faults.agg_planner_runs_prefill else [decode]
        if self.mode == "prefill":
            return [prefill]
        if self.mode == "decode":
            return [decode]
        return [prefill, decode]


def gpu_count(service: dict) -> int:
    limits = ((service.get("resources") or {}).get("limits") or {})
    return int(str(limits.get("gpu", "0")))


class Planner:
    """The tick body over the in-process store (clock-free, so tests drive it directly)."""

    def __init__(self, store: Any, namespace: str, dgd: str, config: PlannerConfig, log, faults: Faults,
                 generation: str = "pod-patching") -> None:
        self.store, self.namespace, self.dgd = store, namespace, dgd
        self.config, self.log, self.faults, self.generation = config, log, faults, generation
        self.registry = CollectorRegistry()
        self.budget = Gauge("dynamo_planner_power_budget_total_watts", "Configured power budget", registry=self.registry)
        self.projected = Gauge("dynamo_planner_power_projected_watts", "Projected power of the DGD", registry=self.registry)
        self.utilization = Gauge("dynamo_planner_power_budget_utilization", "projected / budget", registry=self.registry)
        self.ticks = 0

    def tick(self) -> None:
        self.ticks += 1
        if not self.config.enable_power_awareness:
            return
        try:
            spec = self.store.get(DGD_RESOURCE, self.namespace, self.dgd, copy=False).get("spec") or {}
        except Exception as exc:
            self.log(f"WARNING Could not read DGD {self.dgd}: {exc}")
            return
        services = spec.get("services") or {}
        if self.generation == "pod-patching":
            for sub, limit in self.config.branches(self.faults):
                self._apply_branch(services, sub, limit)
            if self.faults.planner_patches_foreign_pod:
                self._patch_a_foreign_pod()
        self._publish(services)

    def resolve_service(self, services: dict, sub: str) -> str | None:
        for key, svc in services.items():
            if svc.get("subComponentType") == sub:
                return key
        if sub == "prefill" and self.faults.agg_planner_runs_prefill:  # the bug: agg worker serves both
            return next((k for k, s in services.items() if s.get("componentType") == "worker"), None)
        return None

    def component_pods(self, services: dict, sub: str) -> list[dict]:
        service = self.resolve_service(services, sub)
        self.log(f"DEBUG get_component_pods({sub.upper()}) -> service {service}")
        if service is None:
            return []
        selector = f"{DGD_LABEL}={self.dgd},{COMPONENT_LABEL}={service}"
        return self.store.list("pods", self.namespace, label_selector=selector, copy=False)  # read, then patched by name

    def _apply_branch(self, services: dict, sub: str, limit: int | None) -> None:
        if limit is None:
            return
        for pod in self.component_pods(services, sub):
            self._annotate(pod, limit)

    def _annotate(self, pod: dict, limit: int) -> None:
        name = pod["metadata"]["name"]
        if (pod["metadata"].get("annotations") or {}).get(ANNOTATION) == str(limit):
            return  # patch only when the value differs
        try:
            self.store.patch("pods", self.namespace, name, {"metadata": {"annotations": {ANNOTATION: str(limit)}}})
        except Exception as exc:
            self.log(f"WARNING Failed to patch power annotation on pod {name}: {exc}")
            return
        self.log(f"INFO Annotated pod {name} with {ANNOTATION}={limit}")

    def _patch_a_foreign_pod(self) -> None:
        workers = self.store.list("pods", self.namespace, label_selector=f"{COMPONENT_TYPE_LABEL}=worker")
        foreign = sorted((p for p in workers if (p["metadata"].get("labels") or {}).get(DGD_LABEL) != self.dgd),
                         key=lambda p: p["metadata"]["name"])
        if foreign and self.config.decode_engine_gpu_power_limit is not None:
            self._annotate(foreign[0], self.config.decode_engine_gpu_power_limit)

    def _publish(self, services: dict) -> None:
        projected = 0
        for sub, limit in self.config.branches(Faults()):  # the gauges follow the config, not bugs
            key = self.resolve_service(services, sub)
            if key is None:
                continue
            svc = services[key]
            if self.generation == "dgd-owned":
                limit = _int_or_none((svc.get("annotations") or {}).get(ANNOTATION))
            projected += int(svc.get("replicas", 1)) * (limit or 0) * gpu_count(svc)
        if self.faults.planner_projects_every_dgd:
            projected += self._other_dgds_power()
        budget = self.config.total_gpu_power_limit or 0
        self.budget.set(budget)
        self.projected.set(projected)
        self.utilization.set(projected / budget if budget else 0.0)

    def _other_dgds_power(self) -> int:
        """The `planner_projects_every_dgd` bug: every other DGD's worker annotation × its GPUs."""
        total = 0
        for pod in self.store.list("pods", self.namespace, label_selector=f"{COMPONENT_TYPE_LABEL}=worker"):
            meta = pod["metadata"]
            if (meta.get("labels") or {}).get(DGD_LABEL) == self.dgd:
                continue
            limits = [(c.get("resources") or {}).get("limits") or {} for c in pod["spec"].get("containers") or []]
            gpus = sum(int(lim.get("nvidia.com/gpu", 0)) for lim in limits)
            total += (_int_or_none((meta.get("annotations") or {}).get(ANNOTATION)) or 0) * gpus
        return total

    def render(self) -> bytes:
        return generate_latest(self.registry)


def _int_or_none(raw: str | None) -> int | None:
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def is_planner_pod(pod: dict, container: dict) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    argv = list(container.get("command") or []) + list(container.get("args") or [])
    return labels.get(COMPONENT_TYPE_LABEL) == "planner" or "dynamo.planner" in argv


class PlannerWorkload(Workload):
    """The planner container: parse `--config`, tick on the clock, serve gauges on 9085."""

    def __init__(self, faults: Faults, generation: str = "pod-patching") -> None:
        self.faults, self.generation = faults, generation
        self.planner: Planner | None = None
        self._timer: Any = None

    def start(self, ctx: WorkloadContext) -> None:
        argv = list(ctx.container.get("command") or []) + list(ctx.container.get("args") or [])
        labels = ctx.pod["metadata"].get("labels") or {}
        dgd = ctx.env("DYN_PARENT_DGD_K8S_NAME") or labels.get(DGD_LABEL)
        try:
            if not dgd:
                raise PlannerConfigError("DYN_PARENT_DGD_K8S_NAME is not set (DeploymentValidationError)")
            config = PlannerConfig.from_args(argv)
        except PlannerConfigError as exc:
            ctx.log(f"ERROR dynamo.planner: {exc}")
            ctx.clock.call_later(0, lambda: ctx.exit(1))
            return
        namespace = ctx.env("DYN_PARENT_DGD_K8S_NAMESPACE") or ctx.namespace
        self.planner = Planner(ctx.store, namespace, dgd, config, ctx.log, self.faults, self.generation)
        ctx.log(f"INFO Planner for DGD {dgd} started: mode={config.mode}, interval={config.interval_s:g}s")
        self._timer = ctx.clock.every(config.interval_s, self.planner.tick, first_delay=0)

    def stop(self, ctx: WorkloadContext, graceful: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def exec(self, ctx: WorkloadContext, argv: list[str], stdin: bytes | None) -> ExecResult:
        return run_builtin(ctx, argv, stdin)

    def http_get(self, ctx: WorkloadContext, port: int, path: str) -> HttpResponse | None:
        if self.planner is None or port != PLANNER_METRICS_PORT:
            return None
        return 200, "text/plain; version=0.0.4; charset=utf-8", self.planner.render()
