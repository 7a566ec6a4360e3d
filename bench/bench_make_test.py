"""`make test` → wall and CPU seconds, whole and per part.

    .venv/bin/python bench/bench_make_test.py [--repeat N (0: no whole make test)] [--parts] [--serial]

Runs `make test` N times (after the install, which the first `make` does) and prints, per run,
its exit code, wall seconds, CPU seconds (user + system of every process it started) and the
load average before it. On a shared machine the CPU figure is the one to compare: wall time
grows with other people's work, CPU time barely does, and CPU / cores is what the wall time
would be on a quiet machine if the cores were kept busy. --parts also times each part alone
(the code checks with mypy's cache cold, as on a clean clone; the tests; the wheel smoke);
--serial adds the tests in one process, the figure before pytest-xdist.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(name: str, command: list[str], env: dict[str, str] | None = None) -> tuple[int, float, float]:
    load = os.getloadavg()[0]
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    print(f"{name:<34} exit {done.returncode}  {wall:7.1f} s wall  {cpu:7.1f} s CPU  (load average before: {load:.2f})", flush=True)
    if done.returncode:
        print((done.stdout + done.stderr)[-4000:])
    return done.returncode, wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--parts", action="store_true", help="also time each part of `make test` alone")
    parser.add_argument("--serial", action="store_true", help="also time the tests in one process (no pytest-xdist)")
    options = parser.parse_args(argv)
    subprocess.run(["make", "--no-print-directory", ".venv/.linked"], cwd=ROOT, check=True, capture_output=True)
    print(f"{os.cpu_count()} cores")
    failed = 0
    if options.parts:
        with tempfile.TemporaryDirectory(prefix="bench-mypy-cache-") as cache:
            failed |= timed("code checks, mypy cache cold", ["make", "--no-print-directory", "test-code"],
                            env={**os.environ, "MYPY_CACHE_DIR": cache})[0]
        failed |= timed("code checks, mypy cache warm", ["make", "--no-print-directory", "test-code"])[0]
        failed |= timed("pytest (as make test runs it)", ["make", "--no-print-directory", "test-pytest"])[0]
        failed |= timed("wheel smoke", [str(ROOT / ".ci" / "wheel-smoke")])[0]
    if options.serial:
        failed |= timed("pytest in one process", [str(BIN / "pytest"), "tests", "-q", "-p", "no:cacheprovider"])[0]
    walls, cpus = [], []
    for n in range(options.repeat):
        code, wall, cpu = timed(f"make test, run {n + 1}", ["make", "--no-print-directory", "test"])
        failed |= code
        walls.append(wall)
        cpus.append(cpu)
    cores = os.cpu_count() or 1
    if not walls:  # --repeat 0: the parts alone
        return 1 if failed else 0
    print(f"make test: median {statistics.median(walls):.1f} s wall (min {min(walls):.1f}, max {max(walls):.1f}), "
          f"median {statistics.median(cpus):.1f} s CPU (÷ {cores} cores = {statistics.median(cpus) / cores:.1f} s), "
          f"n={len(walls)}; target ≤ 90 s wall")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
