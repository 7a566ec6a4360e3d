"""The agent as a real process (scaled clock) against the in-process agent (virtual clock).

    .venv/bin/python bench/bench_process_agent.py [--worlds path-b,path-a] [--seconds 5] [--rate 25] [--no-catalog]

Per world it measures, for both agents, alternating which runs first:
- start-up: wall seconds from `build_twin(world).start()` to the agent's first reconcile (its
  first pod LIST for the node), i.e. what a process world costs before the first scenario step;
- ticks: agent reconciles per wall second while the twin runs on its own (the process agent on
  the scaled clock at `--rate`; the in-process agent with the virtual clock advanced in
  15 s steps as fast as it goes);
- catalog: the wall time of `stepgraph run --world W` (with `--target-option agent=reference` for
  the process agent) and its pass/fail/skip counts.
A reconcile is counted where both agents meet the twin: the store's pod LIST with the agent's
`spec.nodeName=` field selector (the process agent's arrives over HTTPS, the in-process one's
directly), so the count is the same quantity in both modes.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from stepgraph.twin.world import agent_program_dir, load_world, profile
from stepgraph.twin.world_install import build_twin

ROOT = Path(__file__).resolve().parents[1]


def counting_twin(world_name: str, process: bool, rate: float):
    world = load_world(profile(world_name))
    if process:
        world.agent.program = str(agent_program_dir("reference"))
    twin = build_twin(world, **({"clock": f"scaled:{rate}"} if process else {}))
    ticks: list[float] = []

    def counting(original):
        def list_counting(resource, namespace=None, **kw):
            if getattr(resource, "key", resource) == "pods" and (kw.get("field_selector") or "").startswith(
                    "spec.nodeName="):
                ticks.append(time.monotonic())
            return original(resource, namespace, **kw)
        return list_counting
    # a benchmark's probe, not a test double: the store still answers every call (HTTP lists use
    # list_json, in-process ones list → list_with_version)
    twin.store.list_with_version = counting(twin.store.list_with_version)
    twin.store.list_json = counting(twin.store.list_json)
    return twin, ticks


def startup_and_ticks(world_name: str, process: bool, seconds: float, rate: float) -> tuple[float, float]:
    twin, ticks = counting_twin(world_name, process, rate)
    t0 = time.monotonic()
    twin.start()
    try:
        deadline = t0 + 120
        while not ticks and time.monotonic() < deadline:
            if process:
                time.sleep(0.005)
            else:
                twin.clock.sleep(0.5)
        if not ticks:
            raise RuntimeError(f"{world_name}: the agent never reconciled")
        startup = ticks[0] - t0
        n0, w0 = len(ticks), time.monotonic()
        while time.monotonic() - w0 < seconds:
            if process:
                time.sleep(0.05)
            else:
                twin.clock.sleep(15)
        rate = (len(ticks) - n0) / (time.monotonic() - w0)
        return startup, rate
    finally:
        twin.stop()


def catalog(world_name: str, process: bool, rate: float) -> tuple[float, str]:
    extra = ["--target-option", "agent=reference", "--target-option", f"clock=scaled:{rate}"] if process else []
    t0 = time.monotonic()
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "stepgraph"), "run", "--world", world_name, "--",
                           *extra, "-q", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    summary = re.findall(r"(\d+) (passed|failed|skipped|error)", done.stdout)
    return wall, ", ".join(f"{n} {what}" for n, what in summary) or f"exit {done.returncode}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", default="path-b,path-b-dcgm,path-a,path-a-dcgm")
    parser.add_argument("--seconds", type=float, default=5.0, help="wall seconds to count ticks over")
    parser.add_argument("--rate", type=float, default=25.0, help="the process agent's scaled clock (make run-process's)")
    parser.add_argument("--no-catalog", action="store_true")
    args = parser.parse_args()
    rows = []
    for n, world_name in enumerate(args.worlds.split(",")):
        order = (True, False) if n % 2 == 0 else (False, True)  # alternate which agent runs first
        results = {}
        for process in order:
            startup, rate = startup_and_ticks(world_name, process, args.seconds, args.rate)
            wall, outcome = catalog(world_name, process, args.rate) if not args.no_catalog else (float("nan"), "-")
            results[process] = (startup, rate, wall, outcome)
        for process in (True, False):
            startup, rate, wall, outcome = results[process]
            rows.append((world_name, f"process (scaled {args.rate:g}x)" if process else "in-process (virtual)", startup, rate, wall,
                         outcome))
    print("| world | agent | start-up to first tick (s) | ticks per wall s | catalog wall (s) | catalog |")
    print("|---|---|---|---|---|---|")
    for world_name, agent, startup, rate, wall, outcome in rows:
        print(f"| {world_name} | {agent} | {startup:.2f} | {rate:.1f} | {wall:.1f} | {outcome} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
