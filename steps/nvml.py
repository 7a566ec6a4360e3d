"""NVML steps: per-GPU power limits, compute processes and defaults, read through probe scripts
run inside the Power Agent pod (the same bytes on the twin and a live node).

GPU indices here are NVML indices as the agent pod sees them (`NVIDIA_VISIBLE_DEVICES=all`).
The device plugin assigns GPUs nondeterministically (contract Finding #8), so topology checks
compare multisets; per-index checks compare only against a baseline observed in the same run.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from stepgraph.dsl import AGENT_TICK, POD_START, CheckFailed, NoParams, Params, Reads, Ref, StepContext, Watts, given, then

from . import probes
from ._caps import require_caps_multiset
from ._cluster import Cluster, cluster, run_locally
from ._parsers import parse_index_lists, parse_kv_lines, watts_list
from .k8s import worker_of

WattsList = Annotated[str, AfterValidator(watts_list)]


def restore_defaults(c: Cluster) -> dict[int, str]:
    """Set every GPU to its default limit and read it back; raise if any GPU is not at default.

    Unlike the seed's teardown (which printed "all GPUs at default" even after a FAILED line),
    a GPU left off its default fails the caller.
    """
    argv = probes.argv("restore_defaults")
    result = run_locally(argv[1:]) if c.nvml_via == "local" else c.exec_in_agent(argv)
    lines = {int(k): v for k, v in (line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)}
    failed = {f"GPU {i}": _restore_text(v) for i, v in lines.items() if not v.endswith(",ok")}
    if result.exit_code != 0 or failed or not lines:
        raise CheckFailed(
            "restoring every GPU to its default power limit failed",
            expected="every GPU: now == default (ok)",
            observed=failed or result.stderr.strip() or f"exit code {result.exit_code}",
        )
    return lines


def _restore_text(line: str) -> str:
    was, now, default, verdict = [*line.split(","), "", "", "", ""][:4]
    return f"was {was} W, now {now} W, default {default} W: {verdict}"


@given(
    "nvml.baseline_caps", "a baseline of the NVML power limit of every GPU as {as}", key="nvml_baseline", produces="caps", needs=("nvml",)
)
def baseline_caps(ctx: StepContext, params: NoParams) -> dict[int, int]:
    """Record every GPU's current NVML power limit (W) for later per-GPU comparisons."""
    return cluster(ctx).nvml_caps()


@given(
    "nvml.baseline_pids", "a baseline of the compute processes on every GPU as {as}", key="pid_baseline", produces="pids", needs=("nvml",)
)
def baseline_pids(ctx: StepContext, params: NoParams) -> dict[int, list[int]]:
    """Record the compute PIDs on every GPU, to discover which GPU a new workload lands on."""
    return cluster(ctx).nvml_pids()


class CapsParams(Params):
    caps: WattsList


@then(
    "nvml.caps_multiset", "the NVML power limits of all GPUs are {caps} in any GPU order", key="nvml_caps", needs=("nvml",),
    min_within=AGENT_TICK,
)
def caps_multiset(ctx: StepContext, params: CapsParams) -> None:
    """The multiset of per-GPU NVML limits equals the topology's (GPU assignment is nondeterministic)."""
    require_caps_multiset("NVML power limits (W)", params.caps, cluster(ctx).nvml_caps())


class NewProcessParams(Params):
    since: Annotated[Ref, Reads("pids")]


@then(
    "nvml.new_process_gpu",
    "exactly one GPU has a compute process not in {since:ref}, bound as {as}", key="discover_gpu",
    produces="gpu",
    needs=("nvml",), min_within=POD_START)
def new_process_gpu(ctx: StepContext, params: NewProcessParams) -> int:
    """Find the one GPU on which a compute process appeared since the PID baseline."""
    before: dict[int, list[int]] = ctx.bindings[params.since.name]
    now = parse_index_lists(cluster(ctx).probe("nvml_pids"))
    new = {i: sorted(set(p) - set(before.get(i, []))) for i, p in now.items()}
    gpus = sorted(i for i, pids in new.items() if pids)
    if len(gpus) != 1:
        raise CheckFailed(
            "a new compute process on exactly one GPU",
            expected="one GPU with a PID not in the baseline",
            observed={i: new[i] for i in gpus} or "no new compute process",
        )
    return gpus[0]


class GpuCapParams(Params):
    gpu: Annotated[Ref, Reads("gpu")]
    watts: Watts


@then("nvml.cap_of_gpu", "the NVML power limit of GPU {gpu:ref} is {watts:watts}", key="nvml_cap", needs=("nvml",), min_within=AGENT_TICK)
def cap_of_gpu(ctx: StepContext, params: GpuCapParams) -> None:
    """One GPU (found earlier, e.g. by process discovery) has exactly this NVML limit."""
    gpu = ctx.bindings[params.gpu.name]
    observed = cluster(ctx).nvml_caps()
    if observed.get(gpu) != params.watts:
        raise CheckFailed(
            f"NVML power limit of GPU {gpu}",
            expected=f"{params.watts} W",
            observed=f"{observed.get(gpu)} W (all GPUs: {dict(sorted(observed.items()))})",
        )


class OthersParams(Params):
    gpu: Annotated[Ref, Reads("gpu")]
    baseline: Annotated[Ref, Reads("caps")]


@then(
    "nvml.others_unchanged",
    "the NVML power limit of every GPU other than {gpu:ref} equals {baseline:ref}", key="nvml_others_unchanged",
    needs=("nvml",),
)
def others_unchanged(ctx: StepContext, params: OthersParams) -> None:
    """Blast radius: every other GPU still has the limit it had in the baseline."""
    gpu = ctx.bindings[params.gpu.name]
    result = ctx.matchers.equal_except(ctx.bindings[params.baseline.name], cluster(ctx).nvml_caps(), [gpu])
    result.require(f"GPUs other than {gpu} keep their baseline NVML limits")


class AllEqualParams(Params):
    baseline: Annotated[Ref, Reads("caps")]


@then(
    "nvml.all_equal", "the NVML power limit of every GPU equals {baseline:ref}", key="nvml_all_equal", needs=("nvml",),
    min_within=AGENT_TICK,
)
def all_equal(ctx: StepContext, params: AllEqualParams) -> None:
    """Recovery: every GPU is back at its baseline limit, index by index."""
    result = ctx.matchers.equal_except(ctx.bindings[params.baseline.name], cluster(ctx).nvml_caps())
    result.require("every GPU at its baseline NVML limit")


@then("nvml.all_at_default", "every GPU is at its default NVML power limit", key="nvml_at_default", needs=("nvml",), min_within=AGENT_TICK)
def all_at_default(ctx: StepContext, params: NoParams) -> None:
    """Every GPU's limit equals its NVML default (nothing left capped)."""
    c = cluster(ctx)
    caps = c.nvml_caps()
    defaults = {i: int(v.split(",")[0]) for i, v in _limits(c).items()}
    result = ctx.matchers.equal_except(defaults, caps)
    result.require("every GPU at its default NVML limit")


def _limits(c: Cluster) -> dict[int, str]:
    return {int(k): v for k, v in parse_kv_lines(c.probe("nvml_limits")).items()}


class PodProcessesParams(Params):
    role: str
    dgd: str
    count: int


def pod_pids_per_gpu(c: Cluster, pod_uid: str) -> dict[int, list[int]]:
    """{GPU: the compute PIDs on it that belong to this pod}, attributed as the agent does: each
    PID's `/proc/<pid>/cgroup` (read in the agent pod, which shares the host's PID namespace) names
    the pod's UID (`pod<uid>` with `-`, or `_` under the systemd driver)."""
    wanted = pod_uid.replace("-", "_")
    mine: dict[int, list[int]] = {}
    for gpu, pids in sorted(c.nvml_pids().items()):
        for pid in pids:
            result = c.exec_in_agent(["cat", f"/proc/{pid}/cgroup"])
            if result.exit_code == 0 and wanted in result.stdout.replace("-", "_"):
                mine.setdefault(gpu, []).append(pid)
    return mine


@then(
    "nvml.pod_processes",
    "the {role:word} worker of {dgd} has at least {count:int} compute processes on one GPU",
    key="pod_processes",
    needs=("nvml", "agent"),
)
def pod_processes(ctx: StepContext, params: PodProcessesParams) -> None:
    """B3's precondition: one pod holds several compute processes on one GPU (a TP rank's main
    process and its helper), and its processes are on exactly the GPUs it claims — so a correct
    agent must count it once per GPU, not once per process."""
    c = cluster(ctx)
    pod = c.pod(worker_of(c, params.dgd, params.role))
    claimed = sum(int(((ctr.resources.limits if ctr.resources else None) or {}).get("nvidia.com/gpu", 0))
                  for ctr in pod.spec.containers)
    mine = pod_pids_per_gpu(c, str(pod.metadata.uid))
    if len(mine) != claimed or max((len(pids) for pids in mine.values()), default=0) < params.count:
        raise CheckFailed(
            f"compute processes of pod {pod.metadata.name} per GPU",
            expected=f"its {claimed} GPU(s), one of them with ≥ {params.count} of its processes",
            observed=mine or "no process of the pod on any GPU",
        )
