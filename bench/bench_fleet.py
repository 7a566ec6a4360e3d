"""Multi-node twins: how long a world of N 8-GPU nodes takes to start, and what it costs in memory.

Per node count, in a fresh interpreter each (so peak RSS is that run's own): build the world
(`nodes: [{name: gpu-node, count: N}]`, Path B), start the twin (API server, N kubelets, the
agent DaemonSet), sleep the virtual clock until every agent pod is Running, then one agent tick.

    .venv/bin/python bench/bench_fleet.py              # 1, 8 and 64 nodes
    .venv/bin/python bench/bench_fleet.py 1 16 32      # node counts to sweep
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

DEFAULT_COUNTS = (1, 8, 64)


def one(nodes: int) -> dict:
    from stepgraph.twin.world import parse_world
    from stepgraph.twin.world_install import build_twin

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    twin = build_twin(parse_world(f"nodes: [{{name: gpu-node, count: {nodes}, gpus: 8}}]"))
    with twin:
        t_started = time.perf_counter()
        while True:
            pods = twin.store.list("pods", twin.gpu.world.namespace)
            if len(pods) == nodes and all((p.get("status") or {}).get("phase") == "Running" for p in pods):
                break
            twin.clock.sleep(1)
        t_running = time.perf_counter()
        twin.clock.sleep(15)  # one agent tick on every node
        t_tick = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"nodes": nodes, "start_s": t_started - t0, "agents_running_s": t_running - t0,
            "one_tick_s": t_tick - t_running, "peak_rss_mib": rss / 1024, "rss_growth_mib": (rss - rss0) / 1024}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        print(json.dumps(one(int(argv[1]))))
        return 0
    counts = [int(a) for a in argv] or list(DEFAULT_COUNTS)
    print("| nodes × GPUs | twin started | all agents Running | one tick (all nodes) | peak RSS | RSS per node |")
    print("|---|---|---|---|---|---|")
    for n in counts:
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {n} × 8 | {r['start_s']:.2f} s | {r['agents_running_s']:.2f} s | {r['one_tick_s']:.2f} s "
              f"| {r['peak_rss_mib']:.0f} MiB | {r['rss_growth_mib'] / n:.2f} MiB |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
