"""GPU inventory (index ↔ UUID) and the device plugin: seeded, no over-commit, `all` sees all."""

from __future__ import annotations

import random
import re

import pytest
from stepgraph.twin.host import Host
from stepgraph.twin.node import (
    DeviceAllocator,
    GpuInventory,
    Node,
    NodeConfig,
    gpu_request,
)


def test_inventory_uuids_are_nvidia_shaped_and_seeded():
    inv = GpuInventory.generate(8, random.Random(7))
    assert len(inv) == 8 and len(set(inv)) == 8
    assert all(re.fullmatch(r"GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", u) for u in inv)
    assert inv == GpuInventory.generate(8, random.Random(7))
    assert inv != GpuInventory.generate(8, random.Random(8))
    assert inv.index(inv.uuid(5)) == 5
    with pytest.raises(KeyError):
        inv.index("GPU-nope")
    with pytest.raises(IndexError):
        inv.uuid(8)


def test_allocation_never_over_commits():
    inv = GpuInventory.generate(8, random.Random(0))
    alloc = DeviceAllocator(inv, random.Random(0))
    got = [alloc.allocate(f"p{i}", n) for i, n in enumerate([1, 1, 2, 2, 2])]
    assert sorted(u for g in got for u in g) == sorted(inv)
    assert alloc.allocate("one-more", 1) is None
    alloc.release("p0")
    assert alloc.allocate("one-more", 1) == got[0]


def test_random_assignment_depends_on_the_seed_and_sequential_does_not():
    inv = GpuInventory.generate(8, random.Random(0))

    def assign(seed, mode):
        alloc = DeviceAllocator(inv, random.Random(seed), mode)
        return [alloc.allocate(f"p{i}", n) for i, n in enumerate([1, 1, 2, 2, 2])]
    assert assign(1, "random") == assign(1, "random")
    assert any(assign(1, "random") != assign(s, "random") for s in range(2, 6))
    assert assign(1, "sequential") == assign(2, "sequential")
    assert assign(1, "sequential")[0] == (inv.uuid(0),)


def test_visible_gpus_claim_or_all():
    inv = GpuInventory.generate(8, random.Random(0))
    alloc = DeviceAllocator(inv, random.Random(0))
    node = Node(NodeConfig(), inv, Host(random.Random(0)), alloc)
    claimed = {"metadata": {"uid": "u1"}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}
    all_pod = {"metadata": {"uid": "u2"}, "spec": {"containers": [{"name": "c", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]}}
    none_pod = {"metadata": {"uid": "u3"}, "spec": {"containers": [{"name": "c"}]}}
    assert gpu_request(claimed) == 2
    alloc.allocate("u1", gpu_request(claimed))
    assert len(node.visible_gpus(claimed)) == 2
    assert node.visible_gpus(all_pod) == inv.uuids
    assert node.visible_gpus(none_pod) == ()
