"""Process view: NVML calls per second through the bridge, and how exactly a child's clock follows
the twin's scaled clock.

    .venv/bin/python bench/bench_process_view.py [--calls N] [--rate R]

1. A child process on the real nvidia-ml-py calls nvmlDeviceGetPowerManagementLimit N times
   against the twin's libnvidia-ml.so.1 (one socket round trip each) → calls per second (on the
   machine's clock: this child gets no time contract).
2. Start-up: `python -c pass` with and without the view's environment (the hook's cost).
3. A child on a scaled clock (rate R) waits 15 twin seconds per tick with threading.Event.wait,
   as the Power Agents do, for 10 ticks, and reports each tick's length on its own clock and the
   wall time; the twin's clock is read around the child → scaling error and epoch agreement.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stepgraph.twin.apiserver.resources import ResourceTypes
from stepgraph.twin.apiserver.store import Store
from stepgraph.twin.clock import ScaledClock
from stepgraph.twin.devices import DeviceDirectory, NodeDevices
from stepgraph.twin.faults import Faults
from stepgraph.twin.gpus import GpuBoard, make_uuids
from stepgraph.twin.host import Host
from stepgraph.twin.process.view import NodeView
from stepgraph.twin.workloads import WorkloadContext

CALLS = """
import pynvml, sys, time
n = int(sys.argv[1])
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
t = time.perf_counter()
for _ in range(n):
    pynvml.nvmlDeviceGetPowerManagementLimit(h)
print(time.perf_counter() - t)
"""

TICKS = """
import json, threading, time
stop, ticks = threading.Event(), []
first = (time.time(), time.monotonic())
for _ in range(10):
    t = time.monotonic()
    stop.wait(15)
    ticks.append(time.monotonic() - t)
print(json.dumps({"ticks": ticks, "first": first, "last": (time.time(), time.monotonic())}))
"""


class _Node:
    name = "bench-node"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rate", type=float, default=75.0)
    args = parser.parse_args()
    host = Host(random.Random(1))
    board = GpuBoard.build(_Node.name, "A100-SXM4-80GB", make_uuids(1, _Node.name, 8), host)
    directory = DeviceDirectory()
    directory.add(NodeDevices(board, Faults()))
    clock = ScaledClock(args.rate)
    store = Store(ResourceTypes(), clock, random.Random(1))
    with tempfile.TemporaryDirectory() as work:
        view = NodeView(directory, store, clock, workdir=Path(work))
        try:
            pod = {"metadata": {"name": "bench", "namespace": "default", "uid": "0" * 8 + "-0000-0000-0000-" + "0" * 12},
                   "spec": {"hostPID": True, "containers": [{"name": "c", "image": "bench"}]}}
            ctx = WorkloadContext(pod=pod, container=pod["spec"]["containers"][0], node=_Node(), host=host, gpus=(),
                                  clock=clock, store=store, log=print, exit=print)
            pv = view.open(ctx)
            env = pv.environ({k: v for k, v in os.environ.items() if not k.startswith("STEPGRAPH_")})

            # the call loop times itself, so it runs without the time contract (its clock would be scaled)
            unscaled = {k: v for k, v in env.items() if not k.startswith("STEPGRAPH_TIME_")}

            def child(script: str, *argv: str, environ: dict[str, str] = env) -> str:
                done = subprocess.run([sys.executable, "-c", script, *argv], env=environ, capture_output=True,
                                      text=True, check=True)
                return done.stdout

            seconds = float(child(CALLS, str(args.calls), environ=unscaled))
            print(f"NVML through the bridge: {args.calls} nvmlDeviceGetPowerManagementLimit calls in {seconds:.3f} s "
                  f"= {args.calls / seconds:,.0f} calls/s ({seconds / args.calls * 1e6:.1f} µs per call)")

            plain = {k: v for k, v in os.environ.items() if not k.startswith("STEPGRAPH_")}

            def startup(environ: dict[str, str], runs: int = 10) -> float:
                began = time.monotonic()
                for _ in range(runs):
                    subprocess.run([sys.executable, "-c", "pass"], env=environ, check=True)
                return (time.monotonic() - began) / runs

            bare, hooked = startup(plain), startup(env)
            print(f"Interpreter start-up: {bare * 1000:.0f} ms bare, {hooked * 1000:.0f} ms with the view's hook "
                  f"(+{(hooked - bare) * 1000:.0f} ms)")

            twin0, wall0 = clock.now(), time.monotonic()
            seen = json.loads(child(TICKS))
            twin1, wall = clock.now(), time.monotonic() - wall0
            ticks = seen["ticks"]
            worst = max(abs(t - 15) for t in ticks)
            print(f"Scaled clock at rate {args.rate:g}: 10 agent ticks (Event.wait(15)) took {wall:.2f} s of wall time "
                  f"for {twin1 - twin0:.1f} twin s; child tick lengths {min(ticks):.3f}–{max(ticks):.3f} twin s "
                  f"(worst error {worst:.3f} twin s = {worst / 15:.2%} of a tick, {worst / args.rate * 1000:.1f} ms wall)")
            inside = twin0 <= seen["first"][1] <= seen["last"][1] <= twin1
            print(f"Same epoch: child's monotonic {seen['first'][1]:.2f}…{seen['last'][1]:.2f} within the twin's "
                  f"{twin0:.2f}…{twin1:.2f}: {inside}")
            pv.close()
        finally:
            view.close()
            clock.close()


if __name__ == "__main__":
    main()
