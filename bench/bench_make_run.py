"""`make run` (every world, one trace) → wall time, excluding the install.

    .venv/bin/python bench/bench_make_run.py [--repeat N] [--jobs N]

Runs the same command as the Makefile's `run` target (the four worlds of the test plan, merged
reports and trace) into a temporary reports folder, N times, and prints each wall time, the
median, and the machine's load average before each run (the box is shared, so the load says how
much of the spread is other people's work). Virtual seconds per world: bench/bench_catalog.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORLDS = ("path-b", "path-b-dcgm", "path-a", "path-a-dcgm")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    options = parser.parse_args(argv)
    stepgraph = Path(sys.executable).with_name("stepgraph")
    walls = []
    for n in range(options.repeat):
        with tempfile.TemporaryDirectory(prefix="bench-make-run-") as tmp:
            command = [str(stepgraph), "run", "--reports", tmp, "--jobs", str(options.jobs),
                       *[a for w in WORLDS for a in ("--world", w)], "--", "--gherkin-terminal-reporter", "-vv"]
            load = os.getloadavg()[0]
            start = time.perf_counter()
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
            walls.append(time.perf_counter() - start)
            summary = [line for line in done.stdout.splitlines() if line.startswith("stepgraph trace:")]
            print(f"run {n + 1}: exit {done.returncode}, {walls[-1]:.2f} s wall (load average before: {load:.2f}); "
                  f"{summary[0] if summary else 'no trace line'}")
            if done.returncode:
                print(done.stdout[-3000:] + done.stderr[-3000:])
                return 1
    print(f"make run, {len(WORLDS)} worlds, --jobs {options.jobs}: median {statistics.median(walls):.2f} s "
          f"(min {min(walls):.2f}, max {max(walls):.2f}, n={len(walls)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
