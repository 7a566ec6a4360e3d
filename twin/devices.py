"""One node's GPU side → a single handle: its GPU board, its hostengine (when running), host files.

The GPU workloads (agent, hostengine, CUDA openers, probes) find their node's devices here by
node name, so nothing GPU-related has to live on Twin I's `Node` object.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .dcgm import Hostengine
from .faults import Faults, NodeFaults
from .gpus import GpuBoard
from .nvml import NvmlLibrary
from .power_agent.state import HostFiles


@dataclass
class NodeDevices:
    board: GpuBoard
    faults: Faults | NodeFaults  # the node's own view when its world entry sets switches
    dcgm_order: str | list[int] = "reversed"
    files: HostFiles = field(default_factory=HostFiles)
    hostengine: Hostengine | None = None  # set while a hostengine pod runs on the node

    @property
    def node_name(self) -> str:
        return self.board.node_name

    def nvml(self, visible_uuids: list[str] | tuple[str, ...] | None = None, privileged: bool = True) -> NvmlLibrary:
        """A container's NVML: its visible GPUs, its privilege, the `nvml_no_permission` switch."""
        visible = None if visible_uuids is None else list(visible_uuids)
        return NvmlLibrary(self.board, visible, privileged, writes_denied=lambda: self.faults.nvml_no_permission)

    def start_hostengine(self) -> Hostengine:
        """A fresh nv-hostengine process: groups start again at 2; the driver state stays."""
        self.hostengine = Hostengine(
            self.board,
            order=self.dcgm_order,
            version=lambda: self.faults.dcgm_version,
            connection_lost_gpus=lambda: self.faults.dcgm_set_connection_lost_gpus,
            enforce_fails_gpus=lambda: self.faults.dcgm_enforce_fails_gpus,
        )
        return self.hostengine

    def stop_hostengine(self) -> None:
        if self.hostengine is not None:
            self.hostengine.stop()
        self.hostengine = None


class DeviceDirectory:
    """node name → NodeDevices for the whole twin."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeDevices] = {}

    def add(self, devices: NodeDevices) -> NodeDevices:
        self._nodes[devices.node_name] = devices
        return devices

    def get(self, node_name: str) -> NodeDevices | None:
        return self._nodes.get(node_name)

    def __iter__(self):
        return iter(self._nodes.values())
