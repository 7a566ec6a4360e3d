"""`make run` (every world, one trace) → wall and CPU time, excluding the install.

    .venv/bin/python bench/bench_make_run.py [--repeat N] [--jobs N] [--fresh]

Runs the same command as the Makefile's `run` target (the four worlds of the test plan, merged
reports and trace) N times into one temporary reports folder, as `make run` writes `reports/` each
time: every run after the first has the last one's results (its baseline, and the order its worlds
start in, longest first). With `--fresh`, each run is the first `make run` of a new clone on a new
machine: a new reports folder, an empty cache folder (`STEPGRAPH_CACHE_DIR`: the kept YAML
structures, design-doc ids and twin validators are derived again) and none of the package's
compiled modules (the `__pycache__` folders of the editable install's build/__editable__… tree,
which pip does not compile, are removed before the run). It prints each run's wall time, its CPU
time (user + system of every process of the run, from `wait4`), the medians, and the machine's
load average before each run. The box is shared: the load says how much of the wall time is other
people's work, and the CPU time is the run's own.
Virtual seconds per world: bench/bench_catalog.py.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from harness import machine_speed, run_process

ROOT = Path(__file__).resolve().parents[1]
WORLDS = ("path-b", "path-b-dcgm", "path-a", "path-a-dcgm")


def forget_compiled_package() -> int:
    """Remove the compiled modules of the editable install's tree (what a new clone has not got
    yet); the number of folders removed."""
    folders = [p for p in (ROOT / "build").glob("__editable__*/**/__pycache__") if p.is_dir()]
    for folder in folders:
        shutil.rmtree(folder)
    return len(folders)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--fresh", action="store_true",
                        help="each run as the first `make run` of a new clone: new reports and cache folders, no compiled package modules")
    options = parser.parse_args(argv)
    stepgraph = Path(sys.executable).with_name("stepgraph")
    walls, cpus = [], []
    with contextlib.ExitStack() as stack:
        shared = None if options.fresh else stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-make-run-"))
        for n in range(options.repeat):
            tmp = shared or stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-make-run-"))
            command = [str(stepgraph), "run", "--reports", tmp, "--jobs", str(options.jobs),
                       *[a for w in WORLDS for a in ("--world", w)], "--", "--gherkin-terminal-reporter", "-vv"]
            # As the Makefile's `run` target: Python's default of keeping bytecode caches.
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            if options.fresh:
                env["STEPGRAPH_CACHE_DIR"] = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-make-run-cache-"))
                forget_compiled_package()
            load = os.getloadavg()[0]
            done = run_process(command, ROOT, env, check=False)
            walls.append(done.wall_s)
            cpus.append(done.cpu_s)
            summary = [line for line in done.output.splitlines() if line.startswith("stepgraph trace:")]
            print(f"run {n + 1}: exit {done.returncode}, {done.wall_s:.2f} s wall, {done.cpu_s:.2f} s CPU "
                  f"(load average before: {load:.2f}); {summary[0] if summary else 'no trace line'}")
            if done.returncode:
                print(done.output[-6000:])
                return 1
    print(f"make run, {len(WORLDS)} worlds, --jobs {options.jobs}: wall median {statistics.median(walls):.2f} s "
          f"(min {min(walls):.2f}, max {max(walls):.2f}); CPU median {statistics.median(cpus):.2f} s "
          f"(min {min(cpus):.2f}, max {max(cpus):.2f}); n={len(walls)}; "
          f"machine: ten million additions in {machine_speed():.2f} CPU-s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
