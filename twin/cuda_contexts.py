"""A container's command → the CUDA compute contexts it opens (which host PIDs on which GPUs).

The convention (documented in docs/design/twin-apiserver.md):

1. Annotation `twin.stepgraph.dev/cuda-context: "true"|"false"` on the pod decides outright.
2. Otherwise the container's `command` + `args` text decides: it opens a context when it runs
   CUDA code the way the real stub workers, bystander and Dynamo workers do — `torch.cuda`,
   `.cuda(`, `device='cuda…'` / `device="cuda…"` / `device=f"cuda…"`, or `dynamo.vllm`,
   `dynamo.sglang`, `dynamo.trtllm`.
3. Which GPUs: all the container sees (one PID spans them all, like the stub workers that touch
   every visible device) — unless the code pins literal devices (`cuda:0`, no f-string index) or
   the annotation `twin.stepgraph.dev/cuda-devices: "0,1"` names visible indices; then only those.
4. Tensor parallelism: `dynamo.vllm … --tensor-parallel-size N` (N > 1) runs one worker PID per
   GPU (helper processes, as vLLM's multiprocessing executor does) beside a main PID that holds
   a context on the first of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANNOTATION = "twin.stepgraph.dev/cuda-context"
DEVICES_ANNOTATION = "twin.stepgraph.dev/cuda-devices"
_CUDA_CODE = re.compile(r"torch\.cuda|\.cuda\(|device\s*=\s*f?['\"]cuda|dynamo\.(vllm|sglang|trtllm)")
_PINNED = re.compile(r"['\"]cuda:(\d+)['\"]")
_TP = re.compile(r"--tensor-parallel-size[= ](\d+)")
DEFAULT_GPU_MEMORY = 512 * 1024 * 1024


@dataclass(frozen=True)
class ContextPlan:
    """One process to spawn: a label for its command line and the GPU UUIDs it holds."""

    cmdline: tuple[str, ...]
    gpus: tuple[str, ...]


def command_text(container: dict) -> str:
    return " ".join(str(x) for x in (container.get("command") or []) + (container.get("args") or []))


def plan_contexts(pod: dict, container: dict, visible: tuple[str, ...]) -> list[ContextPlan]:
    """The CUDA processes this container runs, given the GPUs it can see (may be empty)."""
    annotations = pod["metadata"].get("annotations") or {}
    text = command_text(container)
    explicit = annotations.get(ANNOTATION)
    opens = explicit.lower() == "true" if explicit is not None else bool(_CUDA_CODE.search(text))
    if not opens or not visible:
        return []
    cmdline = tuple(str(x) for x in (container.get("command") or ["python3"]))[:3]
    gpus = _pick(visible, annotations.get(DEVICES_ANNOTATION), text)
    tp = _TP.search(text)
    size = int(tp.group(1)) if tp and "dynamo.vllm" in text else 1
    if size > 1:
        workers = gpus[:size]
        main = ContextPlan(cmdline, workers[:1])
        return [main] + [ContextPlan(("VLLM::Worker_TP" + str(i),), (u,)) for i, u in enumerate(workers)]
    return [ContextPlan(cmdline, gpus)]


def _pick(visible: tuple[str, ...], annotation: str | None, text: str) -> tuple[str, ...]:
    if annotation:
        indices = [int(i) for i in annotation.split(",") if i.strip().isdigit()]
    elif "device_count" not in text and (pinned := _PINNED.findall(text)):
        indices = sorted({int(i) for i in pinned})
    else:
        return visible
    return tuple(visible[i] for i in indices if i < len(visible))
