"""Interleaved A/B timing: every figure is ours against a baseline measured in the same run.

A loaded machine drifts; timing ours first and the baseline afterwards folds that drift into the
ratio. So each repetition runs both, alternating which goes first, and a figure reports the
median of each side with its spread (min–max), and the ratio of the medians.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Figure:
    """One row of the ratio table: samples of ours and of the baseline, in one unit."""

    name: str
    baseline: str
    unit: str
    target: float | None = None  # the largest acceptable ratio, if the figure has one
    limit: float | None = None  # the largest acceptable median of ours, in seconds or MiB, if any
    ours: list[float] = field(default_factory=list)
    base: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return statistics.median(self.ours) / statistics.median(self.base)

    def verdict(self) -> str:
        if min(self.base) <= 0 or min(self.ours) <= 0:
            # A difference of two runs (per extra step) that came out at or below zero: the
            # machine's noise is larger than the figure, so no ratio of it means anything.
            return "inside the noise: repeat on a quieter machine or with more scenarios"
        if self.target is not None:
            return f"ratio ≤ {self.target:g}: {'met' if self.ratio <= self.target else 'NOT met'}"
        if self.limit is not None:
            met = statistics.median(self.ours) <= self.limit
            return f"≤ {self.limit:g} {'s' if self.unit != 'MiB' else 'MiB'}: {'met' if met else 'NOT met'}"
        return "—"


def interleave(figure: Figure, ours: Callable[[], float], base: Callable[[], float], repeat: int, *,
               warmup: int = 0) -> Figure:
    """Sample both sides `repeat` times, alternating which runs first, after `warmup` unrecorded
    runs of each (the first run of a process writes the caches every later one reads)."""
    for _ in range(warmup):
        ours()
        base()
    for i in range(repeat):
        pair = [(figure.ours, ours), (figure.base, base)]
        for samples, measure in pair if i % 2 == 0 else reversed(pair):
            samples.append(measure())
    return figure


@dataclass(frozen=True)
class ProcessRun:
    """What one child process cost: wall seconds, CPU seconds (user + system, all its threads) and
    peak resident memory. On a shared machine the wall time carries the other users' load; the
    CPU time is the work the process itself did."""

    wall_s: float
    peak_rss_mib: float
    cpu_s: float = 0.0
    returncode: int = 0
    output: str = ""  # what it printed, stdout and stderr together

    def seconds(self, clock: str) -> float:
        """`wall` or `cpu` seconds."""
        return self.cpu_s if clock == "cpu" else self.wall_s


def machine_speed(repeat: int = 3) -> float:
    """CPU seconds of a fixed pure-Python workload (ten million additions in a loop), the median of
    `repeat`. A ratio is measured against a baseline on the same machine, but a figure with a limit
    in seconds (lint, `make run`, `make test`) depends on how fast the machine is: printed beside
    them, this says how fast the one they were measured on was (a shared virtual machine can be
    several times slower one day than another)."""

    def once() -> float:
        start = time.process_time()
        total = 0
        for i in range(10_000_000):
            total += i
        return time.process_time() - start

    return statistics.median(once() for _ in range(repeat))


def run_process(argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None, *, check: bool = True) -> ProcessRun:
    """Run a child to completion; its own peak RSS comes from wait4, not from the parent's children
    total, and its CPU time includes every process it waited for. With `check`, an exit code other
    than 0 or 5 (no tests) ends the benchmark with the child's output."""
    started = time.perf_counter()
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()
    text = output.decode(errors="replace")
    if check and proc.returncode not in (0, 5):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{text[-3000:]}")
    return ProcessRun(wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, proc.returncode, text)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _spread(samples: list[float], scale: float) -> str:
    low, mid, high = (f(samples) * scale for f in (min, statistics.median, max))
    return f"{_number(mid)} ({_number(low)}–{_number(high)})"


def table(figures: Sequence[Figure]) -> str:
    """Markdown: one row per figure, medians with spread, ratio, target."""
    scale = {"s": 1.0, "ms": 1e3, "µs": 1e6, "MiB": 1.0}
    lines = [
        "| figure | stepgraph (median, min–max) | baseline | baseline (median, min–max) | ratio | target |",
        "|---|---|---|---|---|---|",
    ]
    for f in figures:
        k = scale[f.unit]
        lines.append(
            f"| {f.name} | {_spread(f.ours, k)} {f.unit} | {f.baseline} | {_spread(f.base, k)} {f.unit} | {f.ratio:.2f} | {f.verdict()} |"
        )
    return "\n".join(lines)
