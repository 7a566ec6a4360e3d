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
    .venv/bin/python bench/bench_fleet.py --rehearsal 8 64 [--rate 5]   # fleet runs end to end

Rehearsal (`--rehearsal`): `stepgraph fleet run` of `nvml_caps.feature` and
`applied_limit_metric.yaml` over an N-node twin whose second node is broken (`nvml_no_permission`),
every runner pod running stepgraph as a real process; wall time from the command to its report,
whether exactly the broken node is red, and memory: the peak RSS of this process (twin + fleet
command), of the largest runner, and the peak of the whole process tree's RSS, sampled every
0.2 s from /proc.
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


def _tree_rss_kib(root: int) -> int:
    """The summed VmRSS of `root` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def rehearsal(nodes: int, rate: float) -> dict:
    """One fleet rehearsal over an N-node twin, in this (fresh) process."""
    import os
    import threading

    from stepgraph.targets.fleet.cli import main as fleet_main
    from stepgraph.targets.fleet.rehearsal import RUNNER_IMAGE, serve_runner_image
    from stepgraph.twin.world import parse_world
    from stepgraph.twin.world_install import build_twin

    root = Path(__file__).resolve().parents[1]
    world = "\n".join(["name: rehearsal", "timing: {pod_startup_seconds: 0.5}", "nodes:"]
                      + [f"  - {{name: node-{i:03d}{', faults: {nvml_no_permission: true}' if i == 1 else ''}}}"
                         for i in range(nodes)])
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            peak[0] = max(peak[0], _tree_rss_kib(os.getpid()))

    sampler = threading.Thread(target=sample, daemon=True)
    with tempfile.TemporaryDirectory(prefix="bench-rehearsal-") as tmp:
        os.chdir(root)
        t0 = time.perf_counter()
        with build_twin(parse_world(world), clock=f"scaled:{rate:g}") as twin:
            serve_runner_image(twin, root)
            sampler.start()
            t_twin = time.perf_counter()
            code = fleet_main(["run", "scenarios/multi_dgd/nvml_caps.feature", "scenarios/multi_dgd/applied_limit_metric.yaml",
                               "--nodes", "power-test/node=target", "--image", f"{RUNNER_IMAGE}:bench",
                               "--reports", tmp, "--kubeconfig", str(twin.kubeconfig_path),
                               "--schedule-timeout", "600", "--timeout", "3000", "--", "-q", "-p", "no:cacheprovider"])
            t_fleet = time.perf_counter()
            done.set()
            sampler.join()
        records = json.loads((Path(tmp) / "results.json").read_text())["scenarios"]
    red = sorted({r["world"] for r in records if r["outcome"] != "passed"})
    return {"nodes": nodes, "rate": rate, "exit": code, "twin_start_s": t_twin - t0, "fleet_run_s": t_fleet - t_twin,
            "red": red, "records": len(records),
            "self_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "largest_runner_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
            "tree_peak_mib": peak[0] / 1024}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        print(json.dumps(one(int(argv[1]))))
        return 0
    if argv[:1] == ["--rehearsal-one"]:
        print(json.dumps(rehearsal(int(argv[1]), float(argv[2]))))
        return 0
    if argv[:1] == ["--rehearsal"]:
        rest = argv[1:]
        rate = 5.0
        if "--rate" in rest:
            at = rest.index("--rate")
            rate, rest = float(rest[at + 1]), rest[:at] + rest[at + 2:]
        print("| nodes | twin clock | wall (fleet run) | red columns | peak RSS: tree / this process / largest runner |")
        print("|---|---|---|---|---|")
        for n in [int(a) for a in rest] or [8, 64]:
            out = subprocess.run([sys.executable, __file__, "--rehearsal-one", str(n), str(rate)], capture_output=True,
                                 text=True, check=False)
            if out.returncode != 0:
                print(out.stdout[-3000:], out.stderr[-3000:], file=sys.stderr)
                return 1
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {n} | {r['rate']:g}x | {r['fleet_run_s']:.1f} s (exit {r['exit']}) | {', '.join(r['red']) or 'none'} "
                  f"| {r['tree_peak_mib']:.0f} / {r['self_peak_mib']:.0f} / {r['largest_runner_mib']:.0f} MiB |", flush=True)
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
