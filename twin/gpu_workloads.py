"""The GPU side's containers → workloads in Twin I's registry: CUDA users, hostengine, agent, planner.

- **CUDA context opener**: a container whose program creates CUDA contexts (the stub workers'
  torch loop, the bystander on `cuda:0`, vLLM workers) holds compute PIDs on its GPUs, so NVML
  lists them and the agent attributes the GPUs to the pod. Which GPUs: every visible one (the
  stub's `device_count()` loop, one PID), the first (`cuda:0`), or one PID per GPU (vLLM TP
  ranks). `twin.stepgraph.dev/cuda-contexts: all|first|per-gpu|none` overrides the guess.
- **DCGM hostengine** (`app=nvidia-dcgm-standalone`): a fresh `Hostengine` on its node while
  it runs; exec of `dcgmi …` reaches it.
- **Power Agent** (`app.kubernetes.io/component=power-agent`) and **planner** pods.
"""

from __future__ import annotations

from .devices import DeviceDirectory
from .faults import Faults
from .planners import PlannerWorkload, is_planner_pod
from .power_agent.workload import (
    PowerAgentWorkload,
    container_env,
    is_agent_pod,
    is_privileged,
)
from .probe_exec import ProbeContext, run_probe
from .workloads import ExecResult, Workload, WorkloadContext, WorkloadRegistry

CUDA_ANNOTATION = "twin.stepgraph.dev/cuda-contexts"
CUDA_MODES = ("all", "first", "per-gpu", "none")
HOSTENGINE_LABEL = ("app", "nvidia-dcgm-standalone")


def cuda_mode(pod: dict, container: dict) -> str:
    """How a container uses CUDA, from the override annotation or its command text."""
    override = ((pod.get("metadata") or {}).get("annotations") or {}).get(CUDA_ANNOTATION)
    if override in CUDA_MODES:
        return override
    text = " ".join(list(container.get("command") or []) + list(container.get("args") or []))
    if "dynamo.vllm" in text or "vllm serve" in text:
        return "per-gpu"
    if "device_count" in text and "cuda:" in text:
        return "all"
    if "cuda:0" in text or "torch.cuda" in text:
        return "first"
    return "none"


def uses_cuda(pod: dict, container: dict) -> bool:
    return cuda_mode(pod, container) != "none"


class CudaWorkload(Workload):
    """Holds compute contexts on its GPUs for as long as the container runs."""

    def __init__(self, directory: DeviceDirectory) -> None:
        self.directory = directory
        self.pids: list[int] = []

    def start(self, ctx: WorkloadContext) -> None:
        mode = cuda_mode(ctx.pod, ctx.container)
        gpus = list(ctx.gpus)
        if not gpus or mode == "none":
            ctx.log("RuntimeError: No CUDA GPUs are available")
            return
        main = ctx.processes[0] if ctx.processes else None
        groups = {"all": [gpus], "first": [gpus[:1]], "per-gpu": [[g] for g in gpus]}[mode]
        for n, uuids in enumerate(groups):
            if n == 0 and main is not None:
                main.gpus = tuple(uuids)  # the container's main process opens the first context
                self.pids.append(main.pid)
            else:
                proc = ctx.host.spawn(ctx.pod_uid, ["python3", "-c", f"rank {n}"], container=ctx.container.get("name"),
                                      gpus=uuids)
                self.pids.append(proc.pid)
        devices = self.directory.get(ctx.node.name)
        name = devices.board.by_uuid(gpus[0]).sku.name if devices else "GPU"
        if mode == "first":
            ctx.log(f"bystander PID={self.pids[0]} on {name}")
        else:
            ctx.log(f"CUDA ready, visible_count={len(gpus)}")

    def stop(self, ctx: WorkloadContext, graceful: bool) -> None:
        for pid in self.pids:
            ctx.host.kill(pid)
        self.pids = []

    def exec(self, ctx: WorkloadContext, argv: list[str], stdin: bytes | None) -> ExecResult:
        devices = self.directory.get(ctx.node.name)
        probe = ProbeContext(
            env=container_env(ctx),
            nvml=(lambda: devices.nvml(ctx.gpus, is_privileged(ctx.container)).as_module()) if devices else None,
            fallback=ctx,
        )
        return run_probe(argv, stdin, probe)


def is_hostengine_pod(pod: dict, container: dict) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(HOSTENGINE_LABEL[0]) == HOSTENGINE_LABEL[1]


class HostengineWorkload(Workload):
    """`nv-hostengine -n -b 0.0.0.0 -p 5555`: one fresh hostengine per container start."""

    def __init__(self, directory: DeviceDirectory) -> None:
        self.directory = directory

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
) -> None:
    """Register the GPU side's workloads (agent, hostengine, planner, CUDA users), in that order."""
    registry.register("power-agent", is_agent_pod, lambda p, c: PowerAgentWorkload(directory, faults, agent_generation))
    registry.register("dcgm-hostengine", is_hostengine_pod, lambda p, c: HostengineWorkload(directory))
    registry.register("dynamo-planner", is_planner_pod, lambda p, c: PlannerWorkload(faults, planner_generation))
    registry.register("cuda-context", uses_cuda, lambda p, c: CudaWorkload(directory))
