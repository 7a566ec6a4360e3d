"""The GPU node → its identity, GPU inventory, switches, and which pod sees which GPU.

Shared with the GPU side (`twin/gpus.py`, `twin/nvml.py`): a GPU is identified by its UUID and its
NVML index; `GpuInventory` is that mapping and nothing more (device *state* — power limits and so
on — lives in `twin/gpus.py`).  The node owns *visibility*: the device plugin's allocations
(`nvidia.com/gpu` requests, seeded random choice — Finding #8) and `NVIDIA_VISIBLE_DEVICES=all`.

The scheduler and kubelet that act on a node live in `twin/scheduler.py` and `twin/kubelet.py`.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .host import Host

GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_NODE_NAME = "twin-gpu-node"
DEFAULT_LABELS = {
    "kubernetes.io/hostname": DEFAULT_NODE_NAME,
    "kubernetes.io/os": "linux",
    "kubernetes.io/arch": "amd64",
    "power-test/node": "target",
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
    "nvidia.com/gpu.count": "8",
}


@dataclass(frozen=True)
class GpuInventory:
    """The node's GPUs in NVML index order: `uuids[i]` is the GPU with NVML index `i`."""

    uuids: tuple[str, ...]

    @classmethod
    def generate(cls, count: int, rng: random.Random) -> GpuInventory:
        """`count` GPU UUIDs in NVIDIA's `GPU-8-4-4-4-12` hex shape, drawn from `rng`."""
        def one() -> str:
            h = f"{rng.getrandbits(128):032x}"
            return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        return cls(tuple(one() for _ in range(count)))

    def __len__(self) -> int:
        return len(self.uuids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.uuids)

    def uuid(self, index: int) -> str:
        if not 0 <= index < len(self.uuids):
            raise IndexError(f"GPU index {index} out of range 0..{len(self.uuids) - 1}")
        return self.uuids[index]

    def index(self, uuid: str) -> int:
        try:
            return self.uuids.index(uuid)
        except ValueError:
            raise KeyError(f"no GPU with UUID {uuid!r} on this node") from None

    def pci_bus_id(self, index: int) -> str:
        """A stable PCI bus id per index, as `nvidia-smi` prints it."""
        self.uuid(index)
        return f"00000000:{0x07 + 0x10 * index:02X}:00.0"


@dataclass
class NodeConfig:
    """Switches that make the twin node behave like a particular real node."""

    name: str = DEFAULT_NODE_NAME
    gpu_count: int = 8
    labels: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_LABELS))
    taints: list[dict] = field(default_factory=list)  # e.g. {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
    cgroup_driver: str = "systemd"          # or "cgroupfs" (host.py renders both)
    cdi_mode: bool = True                   # Finding #7: concrete NVIDIA_VISIBLE_DEVICES rejected
    startup_delay: float = 2.0              # seconds from scheduling to Running/Ready
    image_pull_delay: float = 0.0           # extra delay before containers start
    gpu_assignment: str = "random"          # "random" (seeded, Finding #8) or "sequential"
    cpu: str = "64"
    memory: str = "1024Gi"
    max_pods: int = 110


class DeviceAllocator:
    """The NVIDIA device plugin: hands out whole GPUs to pods without over-commit."""

    def __init__(self, inventory: GpuInventory, rng: random.Random, mode: str = "random") -> None:
        if mode not in ("random", "sequential"):
            raise ValueError(f"gpu_assignment must be 'random' or 'sequential', got {mode!r}")
        self.inventory = inventory
        self.mode = mode
        self._rng = rng
        self._claims: dict[str, tuple[str, ...]] = {}  # pod uid → UUIDs
        self._lock = threading.RLock()

    def free(self) -> list[str]:
        with self._lock:
            taken = {u for uuids in self._claims.values() for u in uuids}
            return [u for u in self.inventory if u not in taken]

    def allocate(self, pod_uid: str, count: int) -> tuple[str, ...] | None:
        """Claim `count` GPUs for the pod (idempotent per pod); None if they do not fit."""
        with self._lock:
            if pod_uid in self._claims:
                return self._claims[pod_uid]
            free = self.free()
            if count > len(free):
                return None
            chosen = self._rng.sample(free, count) if self.mode == "random" else free[:count]
            chosen.sort(key=self.inventory.index)  # a container sees its GPUs in index order
            self._claims[pod_uid] = tuple(chosen)
            return self._claims[pod_uid]

    def release(self, pod_uid: str) -> None:
        with self._lock:
            self._claims.pop(pod_uid, None)

    def claimed(self, pod_uid: str) -> tuple[str, ...]:
        with self._lock:
            return self._claims.get(pod_uid, ())

    def claims(self) -> dict[str, tuple[str, ...]]:
        with self._lock:
            return dict(self._claims)


def gpu_request(pod: dict) -> int:
    """Total `nvidia.com/gpu` the pod asks for (limits win, as for extended resources)."""
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        value = (res.get("limits") or {}).get(GPU_RESOURCE, (res.get("requests") or {}).get(GPU_RESOURCE, 0))
        total += int(str(value))
    return total


def env_value(container: dict, name: str) -> str | None:
    """A container's literal env value (valueFrom is not resolved: the twin has no such source)."""
    for env in container.get("env") or []:
        if env.get("name") == name:
            return env.get("value")
    return None


class Node:
    """One GPU node: config, inventory, host process table and device plugin, all seeded."""

    def __init__(self, config: NodeConfig, inventory: GpuInventory, host: Host, allocator: DeviceAllocator) -> None:
        self.config = config
        self.name = config.name
        self.inventory = inventory
        self.host = host
        self.allocator = allocator

    def visible_gpus(self, pod: dict, container: dict | None = None) -> tuple[str, ...]:
        """GPUs a container sees: its device-plugin claim; else `NVIDIA_VISIBLE_DEVICES` — `all`
        sees every GPU, and a list of UUIDs or indices sees those (outside CDI mode only; in CDI
        mode the kubelet refuses such containers, Finding #7)."""
        containers = [container] if container is not None else (pod.get("spec") or {}).get("containers") or []
        claimed = self.allocator.claimed((pod.get("metadata") or {}).get("uid", ""))
        if claimed:
            return claimed
        values = [v for c in containers if (v := env_value(c, "NVIDIA_VISIBLE_DEVICES"))]
        if "all" in values:
            return self.inventory.uuids
        chosen: list[str] = []
        for value in values if not self.config.cdi_mode else ():
            for item in (x.strip() for x in value.split(",")):
                uuid = self.inventory.uuid(int(item)) if item.isdigit() and int(item) < len(self.inventory) else item
                if uuid in self.inventory.uuids and uuid not in chosen:
                    chosen.append(uuid)
        return tuple(sorted(chosen, key=self.inventory.index))
