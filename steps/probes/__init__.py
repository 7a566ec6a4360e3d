"""Probe scripts run with `python3 -c` inside the agent pod; identical bytes for the twin and live.

Each script uses only the standard library and pynvml (the agent image has no curl or wget), and
prints `key=value` lines (never JSON, which some client versions mangle — contract Finding #11).
"""

from __future__ import annotations

import functools
from importlib.resources import files

PROBES = ("nvml_caps", "nvml_pids", "nvml_uuids", "nvml_limits", "nvml_at_default", "metrics", "restore_defaults")
NVML_PROBES = frozenset({"nvml_caps", "nvml_pids", "nvml_uuids", "nvml_limits", "nvml_at_default", "restore_defaults"})


@functools.cache  # read once per process: a scenario execs probes in the agent pod again and again
def source(name: str) -> str:
    """The text of probe `name` (one of PROBES), ready to pass to `python3 -c`."""
    if name not in PROBES:
        raise KeyError(f"unknown probe {name!r}; known: {', '.join(PROBES)}")
    return (files(__name__) / f"{name}.py").read_text(encoding="utf-8")


def argv(name: str) -> list[str]:
    """The exec command line that runs probe `name` inside a container."""
    return ["python3", "-c", source(name)]
