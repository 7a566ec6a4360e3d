"""Twin API server figures with the official client on loopback → printed table.

    .venv/bin/python bench/bench_twin_api.py [--pods 1000]

GET one pod, LIST 1,000 pods with a label selector, PATCH an annotation (calls/s); memory for
1,000 pods (RSS and the store's own share by tracemalloc); PATCH → watch-event latency.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import threading
import time
import tracemalloc

from kubernetes import client, watch
from stepgraph.twin import Twin


def rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def rate(fn, n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        fn(i)
    return n / (time.perf_counter() - start)


def pod(i: int) -> dict:
    return {"metadata": {"name": f"bench-{i:04d}", "labels": {"bench": "yes", "half": str(i % 2)}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=1000)
    n_pods = ap.parse_args().pods
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
    store_mib = store_memory(n_pods)
    print(f"pods created                   {n_pods} ({running} Running)  create {create:8.0f} calls/s")
    print(f"GET one pod                    {get:8.0f} calls/s")
    print(f"LIST {n_pods} pods, label selector {lst:8.1f} calls/s deserialised into V1Pod models, "
          f"{lst_raw:.1f} calls/s raw JSON  (half=0 selects {half})")
    print(f"PATCH an annotation            {patch:8.0f} calls/s")
    print(f"memory for {n_pods} pods           RSS +{rss1 - rss0:6.1f} MiB (whole process), store objects {store_mib:6.1f} MiB (tracemalloc)")
    print(f"PATCH → watch event latency    median {statistics.median(latencies) * 1e3:6.2f} ms, "
          f"p95 {sorted(latencies)[int(len(latencies) * 0.95)] * 1e3:6.2f} ms, max {max(latencies) * 1e3:6.2f} ms")


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
