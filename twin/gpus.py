"""GPU device state of one twin node: SKU profiles (YAML data) → per-GPU power-limit state.

This is the single source of truth that both the NVML surface (`nvml.py`) and the DCGM
hostengine (`dcgm.py`) read and write, so "NVML and DCGM agree" holds by construction, as on a
real node where both talk to the same driver.
"""

from __future__ import annotations

import random
import uuid as uuidlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, model_validator
from ruamel.yaml import YAML

SKU_DIR = Path(str(resources.files(__package__).joinpath("skus")))
DEFAULT_SKU = "A100-SXM4-80GB"


class UnknownSku(LookupError):
    """A world asked for a SKU that has no profile under `twin/skus/`."""


class PowerFigure(BaseModel):
    """One power figure of a SKU: either known (`value` + `source`) or not (`assumed` + `note`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    value: int | None = None
    assumed: int | None = None
    source: str | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _known_or_assumed(self) -> PowerFigure:
        if self.value is None and (self.assumed is None or not self.note):
            raise ValueError("an unknown figure (value: null) needs `assumed` and a `note` saying why")
        return self

    @property
    def watts(self) -> int:
        """The figure the twin uses: the known value, else the documented assumption."""
        return self.value if self.value is not None else int(self.assumed)  # type: ignore[arg-type]

    @property
    def known(self) -> bool:
        return self.value is not None


class PowerLimits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    default: PowerFigure
    max: PowerFigure
    min: PowerFigure


class Sku(BaseModel):
    """A GPU product profile: its NVML name and power-limit constraints."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: str
    name: str
    power_limit_watts: PowerLimits

    @property
    def min_w(self) -> int:
        return self.power_limit_watts.min.watts

    @property
    def max_w(self) -> int:
        return self.power_limit_watts.max.watts

    @property
    def default_w(self) -> int:
        return self.power_limit_watts.default.watts


@cache
def known_skus() -> dict[str, Sku]:
    """Every SKU profile shipped under `twin/skus/`, keyed by its `key`."""
    yaml = YAML(typ="safe", pure=True)
    skus = {}
    for path in sorted(SKU_DIR.glob("*.yaml")):
        sku = Sku.model_validate(yaml.load(path.read_text()))
        skus[sku.key] = sku
    return skus


def load_sku(key: str) -> Sku:
    try:
        return known_skus()[key]
    except KeyError:
        raise UnknownSku(f"unknown SKU {key!r} — known: {', '.join(sorted(known_skus()))}") from None


def make_uuids(seed: int, node_name: str, count: int) -> list[str]:
    """Stable, realistic-looking GPU UUIDs (`GPU-8-4-4-4-12` hex) for one node and seed."""
    rng = random.Random(f"{seed}:{node_name}")
    return [f"GPU-{uuidlib.UUID(int=rng.getrandbits(128), version=4)}" for _ in range(count)]


class ProcessSource(Protocol):
    """Where compute PIDs come from: the node's host process table (`twin/host.py`)."""

    def pids_on_gpu(self, uuid: str) -> list[int]: ...


@dataclass
class Gpu:
    """One device: identity plus the live power limit in milliwatts (the driver's unit)."""

    index: int
    uuid: str
    sku: Sku
    limit_mw: int = 0
    writes: int = 0  # how many successful limit writes hit this device (benchmarks, C4)

    def __post_init__(self) -> None:
        if not self.limit_mw:
            self.limit_mw = self.default_mw

    @property
    def min_mw(self) -> int:
        return self.sku.min_w * 1000

    @property
    def max_mw(self) -> int:
        return self.sku.max_w * 1000

    @property
    def default_mw(self) -> int:
        return self.sku.default_w * 1000

    @property
    def limit_w(self) -> int:
        return round(self.limit_mw / 1000)

    def set_limit_mw(self, milliwatts: int) -> None:
        """Write the limit; the caller (NVML or DCGM surface) has already checked the range."""
        self.limit_mw = int(milliwatts)
        self.writes += 1


@dataclass
class GpuBoard:
    """All GPUs of one node, in NVML enumeration order, plus where their compute PIDs come from."""

    node_name: str
    gpus: list[Gpu]
    processes: ProcessSource | None = None

    @classmethod
    def build(cls, node_name: str, sku: str | Sku, uuids: list[str], processes: ProcessSource | None = None) -> GpuBoard:
        profile = load_sku(sku) if isinstance(sku, str) else sku
        return cls(node_name, [Gpu(i, u, profile) for i, u in enumerate(uuids)], processes)

    def by_uuid(self, uuid: str) -> Gpu:
        for gpu in self.gpus:
            if gpu.uuid == uuid:
                return gpu
        raise KeyError(uuid)

    def pids_on(self, gpu: Gpu) -> list[int]:
        return sorted(self.processes.pids_on_gpu(gpu.uuid)) if self.processes else []

    def caps_w(self) -> dict[int, int]:
        """{NVML index: current limit in W} — what a readback probe prints."""
        return {gpu.index: gpu.limit_w for gpu in self.gpus}


def aiohttp_routes(boards: list[GpuBoard], prefix: str = "/twin/v1/gpus") -> list:
    """The route the API server mounts: GET [?node=NAME] → each node's GPUs as the driver holds
    them, with the number of limit writes each has received (read-only; what a test counts cap
    writes from — no live node exposes such a count). An unknown node is a 404."""
    from aiohttp import web

    def gpus(board: GpuBoard) -> list[dict]:
        return [{"index": g.index, "uuid": g.uuid, "limit_mw": g.limit_mw, "default_mw": g.default_mw, "writes": g.writes}
                for g in board.gpus]

    async def get(request: web.Request) -> web.Response:
        wanted = request.query.get("node")
        found = {b.node_name: gpus(b) for b in boards if wanted is None or b.node_name == wanted}
        if not found:
            return web.json_response({"error": f"no node {wanted!r} — known: {', '.join(b.node_name for b in boards)}"},
                                     status=404)
        return web.json_response({"nodes": found})

    return [web.get(prefix, get)]
