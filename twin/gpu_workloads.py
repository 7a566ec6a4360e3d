"""The GPU side's containers → workloads in Twin I's registry: agent, hostengine, planner, NVML scripts.

(CUDA compute contexts — which PIDs hold which GPUs — are the kubelet's job: `cuda_contexts.py`.)

- **pynvml script pods** (`python -c '<script importing pynvml>'`, e.g. the teardown restore
  pod): the script runs once at start against the node's NVML; output → log; exit status → phase.
- **Dynamo engine workers** (`dynamo.vllm|sglang|trtllm`): CUDA contexts appear after a model
  load delay (world `timing.worker_model_load_seconds`).
- **DCGM hostengine** (`app=nvidia-dcgm-standalone`): a fresh `Hostengine` on its node while
  it runs; exec of `dcgmi …` reaches it.
- **Power Agent** (`app.kubernetes.io/component=power-agent`) and **planner** pods.
"""

from __future__ import annotations

from typing import Any

from .devices import DeviceDirectory
from .faults import Faults
from .planners import PlannerWorkload, is_planner_pod
from .power_agent.agent import RECONCILE_INTERVAL_S
from .power_agent.workload import (
    PowerAgentWorkload,
    container_env,
    is_agent_pod,
    is_privileged,
)
from .probe_exec import ProbeContext, run_probe, run_script
from .workloads import (
    ExecResult,
    Workload,
    WorkloadContext,
    WorkloadRegistry,
    run_builtin,
)

HOSTENGINE_LABEL = ("app", "nvidia-dcgm-standalone")


def python_script(container: dict) -> str | None:
    """The script of a `python -c '<script>'` container, else None."""
    argv = [str(a) for a in list(container.get("command") or []) + list(container.get("args") or [])]
    if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1].startswith("python") and "-c" in argv[1:3]:
        return argv[argv.index("-c", 1) + 1] if argv.index("-c", 1) + 1 < len(argv) else None
    return None


def is_nvml_script_pod(pod: dict, container: dict) -> bool:
    script = python_script(container)
    return script is not None and "pynvml" in script and "torch" not in script


def is_dynamo_worker(pod: dict, container: dict) -> bool:
    text = " ".join(str(a) for a in list(container.get("command") or []) + list(container.get("args") or []))
    return any(f"dynamo.{engine}" in text for engine in ("vllm", "sglang", "trtllm"))


class DynamoWorkerWorkload(Workload):
    """A Dynamo engine worker: its CUDA contexts (spawned by the kubelet) appear only once the
    model has loaded, `load_seconds` after start — so, as on a real node, a planner that starts
    with it annotates the pod before the agent first sees the pod's PIDs on a GPU."""

    def __init__(self, load_seconds: float) -> None:
        self.load_seconds = load_seconds
        self._timer: Any = None

    def start(self, ctx: WorkloadContext) -> None:
        held = [(proc, proc.gpus) for proc in ctx.processes if proc.gpus]
        for proc, _ in held:
            proc.gpus = ()
        argv = [str(a) for a in ctx.container.get("args") or []]
        model = argv[argv.index("--model") + 1] if "--model" in argv[:-1] else "the model"
        ctx.log(f"INFO Loading {model}")

        def loaded() -> None:
            for proc, gpus in held:
                proc.gpus = gpus
            ctx.log(f"INFO Model {model} loaded; CUDA contexts on {sum(len(g) for _, g in held)} GPU(s)")

        self._timer = ctx.clock.call_later(self.load_seconds, loaded)

    def stop(self, ctx: WorkloadContext, graceful: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def exec(self, ctx: WorkloadContext, argv: list[str], stdin: bytes | None) -> ExecResult:
        return run_builtin(ctx, argv, stdin)


class NvmlScriptWorkload(Workload):
    """A container whose program is a pynvml script (the teardown `power-restore-final` pod):
    it runs once at start against the node's NVML, its output goes to the log, its exit status
    ends the container."""

    def __init__(self, directory: DeviceDirectory) -> None:
        self.directory = directory

    def start(self, ctx: WorkloadContext) -> None:
        devices = self.directory.get(ctx.node.name)
        probe = ProbeContext(
            env=container_env(ctx),
            nvml=(lambda: devices.nvml(ctx.gpus, is_privileged(ctx.container)).as_module()) if devices else None,
            fallback=ctx,
        )
        result = run_script(python_script(ctx.container) or "", ["-c"], probe)
        for line in (result.stdout + result.stderr).decode().splitlines():
            ctx.log(line)
        ctx.clock.call_later(0, lambda: ctx.exit(result.exit_code))


def is_hostengine_pod(pod: dict, container: dict) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(HOSTENGINE_LABEL[0]) == HOSTENGINE_LABEL[1]


class HostengineWorkload(Workload):
    """`nv-hostengine -n -b 0.0.0.0 -p 5555`: one fresh hostengine per container start."""

    def __init__(self, directory: DeviceDirectory, faults: Faults) -> None:
        self.directory = directory
        self.faults = faults

    def start(self, ctx: WorkloadContext) -> None:
        devices = self.directory.get(ctx.node.name)
        if devices is None:
            ctx.log("Error: no GPUs found on this node")
            ctx.clock.call_later(0, lambda: ctx.exit(1))
            return
        engine = devices.start_hostengine()
        ctx.log(f"Started host engine version {engine.version} using port number: 5555")

    def stop(self, ctx: WorkloadContext, graceful: bool) -> None:
        devices = self.directory.get(ctx.node.name)
        if devices is not None:
            devices.stop_hostengine()

    def exec(self, ctx: WorkloadContext, argv: list[str], stdin: bytes | None) -> ExecResult:
        devices = self.directory.get(ctx.node.name)
        engine = devices.hostengine if devices else None
        probe = ProbeContext(
            env=container_env(ctx),
            nvml=(lambda: devices.nvml(ctx.gpus or None, is_privileged(ctx.container)).as_module()) if devices else None,
            dcgmi=engine.dcgmi if engine else None,
            fallback=ctx,
            mangle_json=lambda: self.faults.exec_preload_mangles_json,
        )
        return run_probe(argv, stdin, probe)

    def http_get(self, ctx: WorkloadContext, port: int, path: str):
        return None


def register_gpu_workloads(
    registry: WorkloadRegistry,
    directory: DeviceDirectory,
    faults: Faults,
    agent_generation: str = "PA-9790",
    planner_generation: str = "pod-patching",
    agent_tick_seconds: float = RECONCILE_INTERVAL_S,
    worker_model_load_seconds: float = 20.0,
    *,
    auth: Any,
) -> None:
    """Register the GPU side's workloads (agent, hostengine, planner, pynvml scripts), in that order.
    Each reads the fault switches of the node its pod runs on (a node may set its own)."""
    def on_node(pod: dict) -> Any:
        devices = directory.get((pod.get("spec") or {}).get("nodeName") or "")
        return devices.faults if devices is not None else faults

    registry.register("power-agent", is_agent_pod, lambda p, c: PowerAgentWorkload(directory, on_node(p), agent_generation,
                                                                          agent_tick_seconds, auth=auth))
    registry.register("dcgm-hostengine", is_hostengine_pod, lambda p, c: HostengineWorkload(directory, on_node(p)))
    registry.register("dynamo-planner", is_planner_pod, lambda p, c: PlannerWorkload(on_node(p), planner_generation))
    registry.register("nvml-script", is_nvml_script_pod, lambda p, c: NvmlScriptWorkload(directory))
    registry.register("dynamo-worker", is_dynamo_worker, lambda p, c: DynamoWorkerWorkload(worker_model_load_seconds))
