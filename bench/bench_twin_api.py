"""Twin API server figures with the official client on loopback → printed table.

    .venv/bin/python bench/bench_twin_api.py [--pods 1000] [--clock wall|cpu]
    .venv/bin/python bench/bench_twin_api.py --against 942d597 [--rounds 3] [--pods 300] [--clock cpu]

GET one pod, LIST 1,000 pods with a label selector, PATCH an annotation (calls/s); memory for
1,000 pods (RSS and the store's own share by tracemalloc); PATCH → watch-event latency.

`--clock cpu` divides calls by the CPU time the whole process (client and server threads) spent
on them rather than by wall time: on a shared, loaded machine wall time mostly measures the
neighbours. `--against REV` runs this same script against the package of git revision REV (its
`dsl`, `steps`, `targets`, `twin`, exported to a temporary folder first on the import path) and
against this tree, alternately for `--rounds` rounds, and prints both medians, their ratio and
whether this tree is within 10 % of REV.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

from kubernetes import client, watch

from stepgraph.twin import Twin

ROOT = Path(__file__).resolve().parent.parent
RATES = ("create", "get", "list", "list_raw", "patch")  # calls/s: higher is better
BOUND = 0.10  # how much slower than the reference this tree may be

def rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock = time.perf_counter


def rate(fn, n: int) -> float:
    start = clock()
    for i in range(n):
        fn(i)
    return n / max(clock() - start, 1e-9)


def pod(i: int) -> dict:
    return {"metadata": {"name": f"bench-{i:04d}", "labels": {"bench": "yes", "half": str(i % 2)}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]}}


def main() -> None:
    global clock
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="what calls/s divide by")
    ap.add_argument("--against", metavar="REV", help="compare with the package of this git revision")
    ap.add_argument("--rounds", type=int, default=3, help="with --against: runs of each, alternating")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = ap.parse_args()
    if args.against:
        compare(args.against, args.rounds, args.pods, args.clock)
        return
    clock = CLOCKS[args.clock]
    figures = measure(args.pods, memory=not args.json)
    if args.json:
        print(json.dumps(figures))
    else:
        report(figures, args.pods, args.clock)


def measure(n_pods: int, memory: bool = True) -> dict:
    with Twin(seed=0) as twin:
        api = client.CoreV1Api(twin.api_client())
        gc.collect()
        rss0 = rss_mib()
        create = rate(lambda i: api.create_namespaced_pod("default", pod(i)), n_pods)
        twin.clock.sleep(5)  # every pod Running (kubelet start-ups fire)
        gc.collect()
        rss1 = rss_mib()
        running = len(twin.store.list("pods", "default", field_selector="status.phase=Running"))

        get = rate(lambda i: api.read_namespaced_pod("bench-0000", "default"), 500)
        lst = rate(lambda i: api.list_namespaced_pod("default", label_selector="bench=yes,half in (0,1)"), 20)
        lst_raw = rate(lambda i: api.list_namespaced_pod("default", label_selector="bench=yes,half in (0,1)",
                                                         _preload_content=False).read(), 20)
        half = len(api.list_namespaced_pod("default", label_selector="half=0").items)
        patch = rate(lambda i: api.patch_namespaced_pod(
            "bench-0001", "default", {"metadata": {"annotations": {"dynamo.nvidia.com/gpu-power-limit": str(200 + i)}}}), 300)

        latencies = watch_latency(api, twin, 100)
    import stepgraph.twin
    return {"package": str(Path(stepgraph.twin.__file__).resolve().parent),  # which tree was measured
            "create": create, "get": get, "list": lst, "list_raw": lst_raw, "patch": patch, "running": running,
            "half": half, "rss_mib": rss1 - rss0, "store_mib": store_memory(n_pods) if memory else None,
            "watch_median_ms": statistics.median(latencies) * 1e3,
            "watch_p95_ms": sorted(latencies)[int(len(latencies) * 0.95)] * 1e3, "watch_max_ms": max(latencies) * 1e3}


def report(f: dict, n_pods: int, clock_name: str) -> None:
    per = "calls/s" if clock_name == "wall" else "calls/CPU-s"
    print(f"pods created                   {n_pods} ({f['running']} Running)  create {f['create']:8.0f} {per}")
    print(f"GET one pod                    {f['get']:8.0f} {per}")
    print(f"LIST {n_pods} pods, label selector {f['list']:8.1f} {per} deserialised into V1Pod models, "
          f"{f['list_raw']:.1f} {per} raw JSON  (half=0 selects {f['half']})")
    print(f"PATCH an annotation            {f['patch']:8.0f} {per}")
    print(f"memory for {n_pods} pods           RSS +{f['rss_mib']:6.1f} MiB (whole process), "
          f"store objects {f['store_mib']:6.1f} MiB (tracemalloc)")
    print(f"PATCH → watch event latency    median {f['watch_median_ms']:6.2f} ms, "
          f"p95 {f['watch_p95_ms']:6.2f} ms, max {f['watch_max_ms']:6.2f} ms")


def compare(rev: str, rounds: int, n_pods: int, clock_name: str) -> None:
    """This tree against revision `rev`, interleaved (so drifting load hits both alike)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-twin-api-"))
    try:
        package = folder / "stepgraph"
        package.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "dsl", "steps", "targets", "twin"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(package)], input=archive, check=True)
        runs: dict[str, list[dict]] = {"this tree": [], rev: []}
        for i in range(rounds):
            order = [("this tree", None), (rev, folder)]
            for name, path in order if i % 2 == 0 else order[::-1]:
                runs[name].append(_run_once(path, n_pods, clock_name))
                print(f"round {i + 1}/{rounds}: {name} done", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    per = "calls/s" if clock_name == "wall" else "calls/CPU-s"
    print(f"{'measure':<22} {'this tree':>12} {rev:>12}  ratio   (medians of {rounds}, {per}, --pods {n_pods})")
    worst = float("inf")
    for key in RATES:
        ours = statistics.median(r[key] for r in runs["this tree"])
        theirs = statistics.median(r[key] for r in runs[rev])
        worst = min(worst, ours / theirs)
        print(f"{key:<22} {ours:12.1f} {theirs:12.1f}  {ours / theirs:5.2f}")
    for key in ("watch_median_ms", "watch_p95_ms"):
        ours = statistics.median(r[key] for r in runs["this tree"])
        theirs = statistics.median(r[key] for r in runs[rev])
        print(f"{key:<22} {ours:12.2f} {theirs:12.2f}  {ours / theirs:5.2f}  (ms: lower is better)")
    verdict = "within" if worst >= 1 - BOUND else "NOT within"
    print(f"slowest rate at {worst:.2f} of {rev}: {verdict} the {BOUND:.0%} bound")


def _run_once(package_root: Path | None, n_pods: int, clock_name: str) -> dict:
    env = dict(os.environ)
    if package_root is not None:  # ahead of the editable install on the import path
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(package_root), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, __file__, "--pods", str(n_pods), "--clock", clock_name, "--json"],
                          env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    expected = (package_root / "stepgraph" / "twin") if package_root is not None else ROOT / "twin"
    if Path(figures["package"]) != expected.resolve():  # the import path did not pick the tree meant
        raise SystemExit(f"bench ran {figures['package']}, not {expected}")
    return figures


def store_memory(n_pods: int) -> float:
    """What the twin itself holds for `n_pods` running pods (store, kubelet, events), by tracemalloc."""
    with Twin(seed=0) as twin:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for i in range(n_pods):
            twin.store.create("pods", "default", pod(i))
        twin.clock.sleep(5)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
    return sum(s.size_diff for s in after.compare_to(before, "filename")) / 2**20


def watch_latency(api, twin, n: int) -> list[float]:
    sent: dict[str, float] = {}
    got: dict[str, float] = {}
    rv = api.read_namespaced_pod("bench-0002", "default").metadata.resource_version
    ready = threading.Event()

    def watcher() -> None:
        w = watch.Watch()
        ready.set()
        for ev in w.stream(api.list_namespaced_pod, "default", field_selector="metadata.name=bench-0002",
                           resource_version=rv, timeout_seconds=60):
            value = (ev["object"].metadata.annotations or {}).get("seq")
            if value is not None:
                got[value] = time.perf_counter()
            if len(got) >= n:
                w.stop()

    t = threading.Thread(target=watcher)
    t.start()
    ready.wait()
    for i in range(n):
        sent[str(i)] = time.perf_counter()
        api.patch_namespaced_pod("bench-0002", "default", {"metadata": {"annotations": {"seq": str(i)}}})
        while str(i) not in got and t.is_alive():  # one at a time: measures latency, not queueing
            time.sleep(0.0002)
    t.join(timeout=60)
    return [got[k] - sent[k] for k in sent if k in got]


if __name__ == "__main__":
    main()
