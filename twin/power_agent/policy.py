"""(pods on one GPU, their annotations) → the cap to write, per agent generation (contract §3.3).

Pure functions over plain data, so every branch of the conflict / safe-default policy is tested
without a node. Counters are returned as names, not incremented here: the agent owns metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ANNOTATION = "dynamo.nvidia.com/gpu-power-limit"
Generation = Literal["PA-9790", "PA-optin", "PA-late"]
GENERATIONS: tuple[str, ...] = ("PA-9790", "PA-optin", "PA-late")


@dataclass(frozen=True)
class Decision:
    """What to write on one GPU and which counters (metric name, labels) tick because of it."""

    watts: int
    counters: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    level: str = "INFO"
    reason: str = ""


def parse_watts(raw: str | None) -> int | None:
    """The agent's `int(value)`: a decimal integer string in watts, else None (invalid)."""
    if raw is None:
        return None
    try:
        return int(raw)
    except (TypeError, ValueError):
        return None


def in_scope(annotations: dict[str, str] | None, generation: str) -> tuple[bool, str | None]:
    """Is a pod on the node in scope, and with which raw annotation value?

    PA-9790 takes every pod (missing key → None); PA-optin / PA-late only pods carrying the key.
    """
    raw = (annotations or {}).get(ANNOTATION)
    if generation == "PA-9790":
        return True, raw
    return raw is not None, raw


def _c(name: str, **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return name, tuple(sorted(labels.items()))


CONFLICT = _c("multi_pod_gpu_total", disposition="conflict")
AGREE = _c("multi_pod_gpu_total", disposition="agree")
SAFE = _c("safe_default_applied_total")
FAILED = _c("apply_failures_total")


def resolve(entries: list[tuple[str, str | None]], safe_default: int, generation: str) -> Decision:
    """`entries` = distinct (pod uid, raw annotation) on one GPU, at least one."""
    values = [parse_watts(raw) for _, raw in entries]
    if generation == "PA-9790":
        return _resolve_9790(values, safe_default)
    return _resolve_optin(values, safe_default)


def _resolve_9790(values: list[int | None], safe: int) -> Decision:
    if len(values) > 1:
        if any(v is None for v in values) or len(set(values)) > 1:
            return Decision(safe, (CONFLICT, SAFE), "ERROR", f"{len(values)} pods disagree {values}")
        return Decision(values[0], (AGREE,), "WARNING", f"{len(values)} pods agree on {values[0]} W")  # type: ignore[arg-type]
    if values[0] is None:
        return Decision(safe, (SAFE,), "ERROR", "missing or non-integer annotation")
    return Decision(values[0])


def _resolve_optin(values: list[int | None], safe: int) -> Decision:
    parsed = [v for v in values if v is not None]
    if not parsed:  # every in-scope pod has an unusable value
        return Decision(safe, (FAILED, SAFE), "ERROR", "no parseable annotation")
    if len(values) > 1:
        if len(set(parsed)) > 1:
            return Decision(safe, (CONFLICT, SAFE), "ERROR", f"{len(values)} pods disagree {values}")
        return Decision(parsed[0], (AGREE,), "WARNING", f"{len(values)} pods agree on {parsed[0]} W (lenient)")
    return Decision(parsed[0])
