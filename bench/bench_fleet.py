"""Multi-node twins and per-node catalog runs: start time, wall time and memory by node count.

Twin start, per node count, in a fresh interpreter each (so peak RSS is that run's own): build the
world (`nodes: [{name: gpu-node, count: N}]`, Path B), start the twin (API server, N kubelets,
the agent DaemonSet), sleep the virtual clock until every agent pod is Running, then one tick.

Catalog (`--catalog`): `stepgraph run scenarios/multi_dgd --nodes power-test/node=target` over
such a world, for each (nodes, workers) pair; wall time, scenarios per second, and the peak RSS
of the largest process (a worker holds the whole twin).

    .venv/bin/python bench/bench_fleet.py                          # twin start: 1, 8 and 64 nodes
    .venv/bin/python bench/bench_fleet.py 1 16 32                  # node counts to sweep
    .venv/bin/python bench/bench_fleet.py --catalog 1:0 8:0 8:2 64:2   # nodes:workers pairs
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def catalog(nodes: int, workers: int) -> dict:
    """One `stepgraph run --nodes` of the catalog over an N-node world, in a child process."""
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        world = Path(tmp) / "world.yaml"
        world.write_text(f"name: bench-{nodes}\nnodes: [{{name: gpu-node, count: {nodes}, gpus: 8}}]\n")
        argv = [sys.executable, "-m", "stepgraph.dsl.cli", "run", str(root / "scenarios" / "multi_dgd"),
                "--world", str(world), "--nodes", "power-test/node=target", "--workers", str(workers),
                "--reports", str(Path(tmp) / "r"), "--", "-q", "-p", "no:cacheprovider"]
        t0 = time.perf_counter()
        done = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        summary = json.loads((Path(tmp) / "r" / "results.json").read_text())["summary"]
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"nodes": nodes, "workers": workers, "wall_s": wall, "exit": done.returncode, "summary": summary,
            "peak_rss_mib": rss}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        print(json.dumps(one(int(argv[1]))))
        return 0
    if argv[:1] == ["--catalog-one"]:
        print(json.dumps(catalog(int(argv[1]), int(argv[2]))))
        return 0
    if argv[:1] == ["--catalog"]:
        print("| nodes | workers | wall | scenarios (passed/skipped/failed) | scenarios/s | peak RSS (largest process) |")
        print("|---|---|---|---|---|---|")
        for pair in argv[1:] or ["1:0", "8:0", "8:2", "64:2"]:
            n, w = (int(x) for x in pair.split(":"))
            out = subprocess.run([sys.executable, __file__, "--catalog-one", str(n), str(w)], capture_output=True,
                                 text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            s = r["summary"]
            print(f"| {n} | {w} | {r['wall_s']:.1f} s | {s['total']} ({s['passed']}/{s['skipped']}/{s['failed']}) "
                  f"| {s['total'] / r['wall_s']:.1f} | {r['peak_rss_mib']:.0f} MiB |", flush=True)
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
