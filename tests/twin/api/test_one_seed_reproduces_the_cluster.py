"""One seed drives every random choice: same seed → same UIDs, PIDs, GPU UUIDs, assignment and
timestamps; another seed → a different cluster."""

from __future__ import annotations

from stepgraph.twin import Twin


def fingerprint(seed: int) -> dict:
    with Twin(seed=seed) as t:
        for i, n in enumerate([1, 1, 2, 2, 2]):
            t.store.create("pods", "default", {"metadata": {"name": f"w{i}"}, "spec": {"containers": [
                {"name": "c", "image": "x:1", "command": ["python3", "-c", "import torch; torch.cuda.init()"],
                 "resources": {"limits": {"nvidia.com/gpu": str(n)}}}]}})
        t.clock.sleep(5)
        pods = t.store.list("pods", "default")
        return {
            "gpus": t.inventory.uuids,
            "uids": [p["metadata"]["uid"] for p in pods],
            "ips": [p["status"].get("podIP") for p in pods],
            "claims": [t.node.allocator.claimed(p["metadata"]["uid"]) for p in pods],
            "pids": [t.host.pids_of_pod(p["metadata"]["uid"]) for p in pods],
            "created": [p["metadata"]["creationTimestamp"] for p in pods],
            "events": sorted(e["metadata"]["name"] for e in t.store.list("events", "default")),
        }


def test_same_seed_same_cluster():
    assert fingerprint(11) == fingerprint(11)


def test_different_seed_differs_in_every_random_choice():
    a, b = fingerprint(11), fingerprint(12)
    for key in ("gpus", "uids", "ips", "pids", "events"):
        assert a[key] != b[key], key
    assert a["created"] == b["created"]  # virtual time, not randomness
