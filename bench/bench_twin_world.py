"""What a world costs the twin, in CPU seconds: its start, idle virtual time, one world's catalog.

    .venv/bin/python bench/bench_twin_world.py [--repeat N] [--idle SECONDS] [--worlds W …] [--no-catalog]
    .venv/bin/python bench/bench_twin_world.py --child catalog path-a-dcgm   # one measurement (to profile)

Each measurement runs in a child process of its own that first imports what `stepgraph run`'s
world processes start with (the twin target's `preload`), as `make run` forks them, so a figure
holds the world's own work and none of the imports. Per world (`examples/profiles/`):

- **start, first**: `build_twin(world)` + `start()` in a process that has started no twin yet —
  schemas, compiled validators, the store, controllers, scheduler, kubelets, the GPU side, the
  in-process agent and planners; **start, again**: the same in the same process.
- **idle**: `clock.sleep(SECONDS)` on the started twin, nothing else — the agent's ticks, the
  planners', the kubelet's probes; with the timer callbacks the virtual clock fired on the way.
- **catalog**: `pytest scenarios --target-option world=W` in-process, as a `make run` world
  process runs it; its CPU split by thread (the test's main thread, which also runs the twin's
  timers while a step waits; the API server's event loop; its executor threads, which run exec
  streams; the rest).

CPU is user + system of the whole process (`time.process_time`), per thread from
/proc/self/task (10 ms ticks). Medians of `--repeat` children, with min–max.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WORLDS = ("path-b", "path-b-dcgm", "path-a", "path-a-dcgm")
TICK = os.sysconf("SC_CLK_TCK")


def _preload() -> None:
    from stepgraph.targets.twin import TwinTarget

    TwinTarget().preload()


def _thread_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of every live thread of this process, by native id."""
    found: dict[int, float] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue  # ended meanwhile
        found[int(tid)] = (int(fields[11]) + int(fields[12])) / TICK
    return found


class ThreadMeter:
    """Samples every thread's CPU, under its Python name, until stopped (threads end mid-run: the
    twin's server and executor threads stop with the twin, so the last sample before is kept)."""

    def __init__(self, period: float = 0.05) -> None:
        self._period = period
        self._stop = threading.Event()
        self.cpu: dict[int, tuple[str, float]] = {}
        self._thread = threading.Thread(target=self._run, name="bench-meter", daemon=True)

    def _sample(self) -> None:
        names = {t.native_id: t.name for t in threading.enumerate()}
        for tid, cpu in _thread_cpu().items():
            name = names.get(tid) or self.cpu.get(tid, ("?", 0.0))[0]
            self.cpu[tid] = (name, cpu)

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            self._sample()

    def __enter__(self) -> ThreadMeter:
        self._sample()
        self._start = dict(self.cpu)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def by_group(self) -> dict[str, float]:
        groups: dict[str, float] = {}
        for tid, (name, cpu) in self.cpu.items():
            cpu -= self._start.get(tid, (name, 0.0))[1]
            group = ("main" if name == "MainThread" else "api server" if name == "twin-apiserver"
                     else "api executor" if name.startswith("asyncio_") else "meter" if name == "bench-meter" else "other")
            groups[group] = groups.get(group, 0.0) + cpu
        return groups


def child_start_idle(world_name: str, idle: float) -> dict[str, Any]:
    _preload()
    from stepgraph.twin import clock as clock_module
    from stepgraph.twin.world import load_world, profile
    from stepgraph.twin.world_install import build_twin

    fired = 0
    real_fire = clock_module._fire

    def counting_fire(queue: Any, timer: Any) -> None:
        nonlocal fired
        fired += 1
        real_fire(queue, timer)

    clock_module._fire = counting_fire  # type: ignore[assignment]  (this child only: counts timer callbacks)
    result: dict[str, Any] = {}
    for key in ("start_first", "start_again"):
        world = load_world(profile(world_name))
        t0 = time.process_time()
        twin = build_twin(world).start()
        t1 = time.process_time()
        fired = 0
        twin.clock.sleep(idle)
        t2 = time.process_time()
        twin.stop()
        result[key] = t1 - t0
        result.setdefault("idle", t2 - t1)
        result.setdefault("fired", fired)
    return result


def child_catalog(world_name: str) -> dict[str, Any]:
    _preload()
    import pytest

    os.chdir(ROOT)
    with ThreadMeter() as meter:
        t0 = time.process_time()
        code = pytest.main(["scenarios", "-p", "no:cacheprovider", "-p", "no:terminal",
                            "--target-option", f"world={world_name}"])
        cpu = time.process_time() - t0
    if int(code) not in (0, 5):
        raise SystemExit(f"catalog of {world_name}: pytest exit {int(code)}")
    return {"catalog": cpu, "threads": meter.by_group()}


def run_child(mode: str, world: str, idle: float) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    argv = [sys.executable, __file__, "--child", mode, world, "--idle", str(idle)]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cell(samples: list[float], digits: int = 3) -> str:
    mid = statistics.median(samples)
    return f"{mid:.{digits}f}" if len(samples) == 1 else f"{mid:.{digits}f} ({min(samples):.{digits}f}–{max(samples):.{digits}f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="child processes per measurement (median)")
    parser.add_argument("--idle", type=float, default=900.0, help="virtual seconds of the idle row")
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS))
    parser.add_argument("--no-catalog", action="store_true", help="only the start and idle rows")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "WORLD"), help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        mode, world = options.child
        result = child_catalog(world) if mode == "catalog" else child_start_idle(world, options.idle)
        print(json.dumps(result))
        return 0
    print(f"CPU seconds (user + system) per world, medians of {options.repeat} children (min–max); "
          f"load average before: {os.getloadavg()[0]:.2f}")
    header = (f"| world | start, first | start, again | idle {options.idle:g} virtual s | timers fired |"
              + (" catalog | main thread | api server | api executor | other |" if not options.no_catalog else ""))
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for world in options.worlds:
        rows: dict[str, list[float]] = {}
        for _ in range(options.repeat):
            measured = run_child("start", world, options.idle)
            for key in ("start_first", "start_again", "idle", "fired"):
                rows.setdefault(key, []).append(measured[key])
            if not options.no_catalog:
                measured = run_child("catalog", world, options.idle)
                rows.setdefault("catalog", []).append(measured["catalog"])
                for group in ("main", "api server", "api executor", "other"):
                    rows.setdefault(group, []).append(measured["threads"].get(group, 0.0))
        cells = [_cell(rows["start_first"]), _cell(rows["start_again"]), _cell(rows["idle"]), f"{statistics.median(rows['fired']):.0f}"]
        if not options.no_catalog:
            cells += [_cell(rows[k], 2) for k in ("catalog", "main", "api server", "api executor", "other")]
        print(f"| {world} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
