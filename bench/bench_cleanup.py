"""Nothing left behind → interruption points tried and leftovers found, the catalog's pass rate
and wall time under API faults, and the time from SIGINT to exit.

    .venv/bin/python bench/bench_cleanup.py [--scenario F] [--rates 0,0.05,0.1] [--sigint-delays 0,0.5,1,2] [--skip matrix,faults,sigint]

1. Interruption matrix: the scenario runs in-process on the twin once per API request N, with
   SIGINT sent right after the N-th request (the client layer's hook), N = 1, 2, … until a run is
   no longer interrupted (every request was tried). Each run's leftovers come from its cleanup
   ledger: the twin target's own check (store and GPU board) and the run-end check over the API.
2. API faults: the whole catalog on Path B and Path A at each fault rate (429/500/503/reset/
   latency/watch drop; latency 0.05 s): scenarios passed / run, wall time, leftovers.
3. SIGINT to exit: `pytest <scenario>` in a child process, SIGINT from outside each delay after
   the child's twin started (its work folder appears); the time until the child exited, its exit
   code, the temp folders it left and its last line.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "catalog"))

from catalog_runs import run_catalog  # noqa: E402
from cleanup_recorder import CleanupRecorder  # noqa: E402

from stepgraph.steps._cluster import SIGINT_AFTER_ENV  # noqa: E402


def _leftovers(recorder: CleanupRecorder) -> tuple[int, int]:
    gpus = [item for item in recorder.left if "GPU" in item]
    return len(recorder.left) - len(gpus), len(gpus)


def interruption_matrix(scenario: str, limit: int) -> None:
    interrupted = objects = gpus = wrong_exit = 0
    started = time.perf_counter()
    for after in range(1, limit + 1):
        os.environ[SIGINT_AFTER_ENV] = str(after)
        recorder = CleanupRecorder()
        run = run_catalog("--target-option", "world=path-b", files=(scenario,), plugins=(recorder,))
        o, g = _leftovers(recorder)
        objects, gpus = objects + o, gpus + g
        wrong_exit += run.returncode != (2 if recorder.interrupted else 0)
        if o or g:
            print(f"  SIGINT after request {after}: {recorder.summary}")
        if not recorder.interrupted:
            break
        interrupted += 1
    os.environ.pop(SIGINT_AFTER_ENV, None)
    print(f"interruption matrix ({scenario}, path-b): {interrupted} interruption points (every API request) + 1 run past the last,"
          f" {objects} objects and {gpus} GPUs left behind, {wrong_exit} wrong exit codes, {time.perf_counter() - started:.1f} s")


def fault_rates(rates: list[float]) -> None:
    for rate in rates:
        for world in ("path-b", "path-a"):
            recorder = CleanupRecorder()
            t0 = time.perf_counter()
            run = run_catalog("--target-option", f"world={world}", "--target-option",
                              f"faults={{api_fault_rate: {rate}, api_latency_seconds: 0.05}}", plugins=(recorder,))
            wall = time.perf_counter() - t0
            ran = {i: r for i, r in run.outcomes.items() if r["outcome"] != "skipped"}
            passed = sum(r["outcome"] == "passed" for r in ran.values())
            o, g = _leftovers(recorder)
            print(f"faults {rate:>4.0%} {world}: {passed}/{len(ran)} scenarios passed, exit {run.returncode},"
                  f" {wall:.1f} s wall, {o} objects / {g} GPUs left behind")


def _wait_for_the_twin(pid: int, timeout: float = 120.0) -> None:
    """Until the child's twin exists (its work folder is named after the child's pid)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not list(Path(tempfile.gettempdir()).glob(f"stepgraph-twin-{pid}-*")):
        time.sleep(0.05)


def sigint_to_exit(scenario: str, delays: list[float]) -> None:
    env = {k: v for k, v in os.environ.items() if k != SIGINT_AFTER_ENV}
    for delay in delays:
        child = subprocess.Popen([sys.executable, "-m", "pytest", f"scenarios/multi_dgd/{scenario}", "-q", "-p", "no:cacheprovider"],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        _wait_for_the_twin(child.pid)  # the session has started: from here on the run is ours to stop
        time.sleep(delay)
        sent = time.perf_counter()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=120)
        took = time.perf_counter() - sent
        last = (out.strip().splitlines() or [""])[-1]
        folders = len(list(Path(tempfile.gettempdir()).glob(f"stepgraph-*-{child.pid}-*")))
        print(f"SIGINT {delay:.1f} s after start: exit {child.returncode} after {took:.2f} s, {folders} temp folders left;"
              f" last line: {last[:160]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="conflict.feature")
    parser.add_argument("--limit", type=int, default=400, help="stop the matrix after this many requests")
    parser.add_argument("--rates", default="0,0.05,0.1")
    parser.add_argument("--sigint-delays", default="0,0.5,1,1.5,2,3")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: matrix,faults,sigint")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    if "matrix" not in skip:
        interruption_matrix(args.scenario, args.limit)
    if "faults" not in skip:
        fault_rates([float(r) for r in args.rates.split(",")])
    if "sigint" not in skip:
        sigint_to_exit(args.scenario, [float(d) for d in args.sigint_delays.split(",")])


if __name__ == "__main__":
    main()
