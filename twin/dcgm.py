"""GPU board → a DCGM hostengine: gpuIds in their own order, groups, config Set/Enforce, fields, `dcgmi`.

The hostengine writes power limits into the same `GpuBoard` NVML reads, so a DCGM-written cap is
what an NVML readback sees (contract §10.3). The agent's DCGM actuator talks to it through
`DcgmConnection` (the calls pydcgm makes: discovery, group create/add, config Set/Enforce, latest
field values), raising `DcgmError` with the real `DCGM_ST_*` codes; probes talk to it through
`dcgmi(argv)`, which prints the JSON of DCGM 4.0–4.4 or 4.5+ depending on `version`.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from .gpus import Gpu, GpuBoard

# dcgm_structs status codes (dcgm_errors.h)
DCGM_ST_OK = 0
DCGM_ST_BADPARAM = -1
DCGM_ST_GENERIC_ERROR = -3
DCGM_ST_NOT_CONFIGURED = -5
DCGM_ST_NOT_SUPPORTED = -6
DCGM_ST_NO_DATA = -14
DCGM_ST_CONNECTION_NOT_VALID = -21

# dcgm_fields field ids (watts, doubles)
DCGM_FI_DEV_POWER_MGMT_LIMIT = 160
DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN = 161
DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX = 162
DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF = 163

FIRST_USER_GROUP_ID = 2  # 0 and 1 are the built-in all-GPUs / all-NvSwitches groups
AGENT_GROUP_PREFIX = "dynamo-power-agent-gpu-"
_NOT_SPECIFIED = "Not Specified"


class DcgmError(Exception):
    """What pydcgm raises (`dcgm_structs.DCGMError`): `.value` is the DCGM_ST_* code."""

    def __init__(self, value: int, message: str = "") -> None:
        super().__init__(f"DCGM error {value}: {message}" if message else f"DCGM error {value}")
        self.value = value


@dataclass
class Group:
    group_id: int
    name: str
    gpu_ids: list[int] = field(default_factory=list)


def dcgm_order(count: int, order: str | list[int]) -> list[int]:
    """gpuId k → NVML index. `reversed` (default) makes the identity map do real work (B6)."""
    if isinstance(order, list):
        if sorted(order) != list(range(count)):
            raise ValueError(f"DCGM order must be a permutation of 0..{count - 1}, got {order}")
        return list(order)
    if order == "reversed":
        return list(reversed(range(count)))
    if order == "same":
        return list(range(count))
    if order == "rotated":
        return [(k + count // 2) % count for k in range(count)]
    raise ValueError(f"unknown DCGM order {order!r} — use reversed, same, rotated or a permutation list")


class Hostengine:
    """One node's nv-hostengine: state lives here; clients hold `DcgmConnection`s to it."""

    def __init__(
        self,
        board: GpuBoard,
        order: str | list[int] = "reversed",
        version: Callable[[], str] = lambda: "4.5",
        connection_lost_gpus: Callable[[], list[int]] = list,
        enforce_fails_gpus: Callable[[], list[int]] = list,
    ) -> None:
        self.board = board
        self._nvml_index_of = dcgm_order(len(board.gpus), order)
        self._version = version
        self._connection_lost_gpus = connection_lost_gpus  # fault switches, read at call time
        self._enforce_fails_gpus = enforce_fails_gpus
        self.running = True
        self.restart()

    def restart(self) -> None:
        """A fresh hostengine: no groups, no targets, every open connection invalid."""
        self.groups: dict[int, Group] = {}
        self.targets: dict[int, int] = {}  # gpuId → configured power limit target (W)
        self._next_group_id = FIRST_USER_GROUP_ID
        self._generation = getattr(self, "_generation", 0) + 1
        self._dropped_once: set[int] = set()

    def stop(self) -> None:
        self.running = False
        self._generation += 1

    @property
    def version(self) -> str:
        return self._version()

    # --- the pydcgm surface ------------------------------------------------------------------
    def connect(self) -> DcgmConnection:
        if not self.running:
            raise DcgmError(DCGM_ST_CONNECTION_NOT_VALID, "hostengine not reachable")
        return DcgmConnection(self, self._generation)

    def gpu(self, gpu_id: int) -> Gpu:
        if not 0 <= gpu_id < len(self._nvml_index_of):
            raise DcgmError(DCGM_ST_BADPARAM, f"no GPU with gpuId {gpu_id}")
        return self.board.gpus[self._nvml_index_of[gpu_id]]

    def gpu_ids(self) -> list[int]:
        return list(range(len(self._nvml_index_of)))

    def create_group(self, name: str) -> int:
        group = Group(self._next_group_id, name)
        self.groups[group.group_id] = group
        self._next_group_id += 1
        return group.group_id

    def destroy_group(self, group_id: int) -> None:
        self._group(group_id)
        del self.groups[group_id]

    def _group(self, group_id: int) -> Group:
        try:
            return self.groups[group_id]
        except KeyError:
            raise DcgmError(DCGM_ST_NOT_CONFIGURED, f"group {group_id} does not exist") from None

    def config_set(self, group_id: int, watts: int) -> None:
        group = self._group(group_id)
        for gpu_id in group.gpu_ids:
            if gpu_id in self._connection_lost_gpus() and gpu_id not in self._dropped_once:
                self._dropped_once.add(gpu_id)  # once per hostengine lifetime, as a blip
                self._generation += 1
                raise DcgmError(DCGM_ST_CONNECTION_NOT_VALID, "connection to hostengine lost")
            gpu = self.gpu(gpu_id)
            if not gpu.sku.min_w <= watts <= gpu.sku.max_w:
                raise DcgmError(DCGM_ST_BADPARAM, f"power limit {watts} W outside [{gpu.sku.min_w}, {gpu.sku.max_w}]")
        for gpu_id in group.gpu_ids:
            self.targets[gpu_id] = int(watts)
            self.gpu(gpu_id).set_limit_mw(int(watts) * 1000)

    def config_enforce(self, group_id: int) -> None:
        group = self._group(group_id)
        failing = [g for g in group.gpu_ids if g in self._enforce_fails_gpus()]
        if failing:
            raise DcgmError(DCGM_ST_GENERIC_ERROR, f"enforce failed on gpuIds {failing}")
        for gpu_id in group.gpu_ids:
            if gpu_id in self.targets:
                self.gpu(gpu_id).set_limit_mw(self.targets[gpu_id] * 1000)

    def latest_values(self, gpu_id: int, field_ids: list[int]) -> dict[int, float]:
        gpu = self.gpu(gpu_id)
        table = {
            DCGM_FI_DEV_POWER_MGMT_LIMIT: gpu.limit_mw / 1000,
            DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN: float(gpu.sku.min_w),
            DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX: float(gpu.sku.max_w),
            DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF: float(gpu.sku.default_w),
        }
        missing = [f for f in field_ids if f not in table]
        if missing:
            raise DcgmError(DCGM_ST_NO_DATA, f"fields {missing} not modelled")
        return {f: table[f] for f in field_ids}

    # --- dcgmi -------------------------------------------------------------------------------
    def dcgmi(self, argv: list[str]) -> tuple[str, str, int]:
        """Run `dcgmi <argv>` → (stdout, stderr, exit code)."""
        return _Dcgmi(self).run(argv)


class DcgmConnection:
    """A client handle (pydcgm `DcgmHandle`): invalid once the hostengine restarts or drops it."""

    def __init__(self, engine: Hostengine, generation: int) -> None:
        self._engine = engine
        self._generation = generation

    def _live(self) -> Hostengine:
        if not self._engine.running or self._engine._generation != self._generation:
            raise DcgmError(DCGM_ST_CONNECTION_NOT_VALID, "connection is no longer valid")
        return self._engine

    def get_all_gpu_ids(self) -> list[int]:
        return self._live().gpu_ids()

    def gpu_uuid(self, gpu_id: int) -> str:
        return self._live().gpu(gpu_id).uuid

    def create_group(self, name: str) -> int:
        return self._live().create_group(name)

    def destroy_group(self, group_id: int) -> None:
        self._live().destroy_group(group_id)

    def gpu_attributes(self, gpu_id: int) -> dict:
        """What `GetGpuAttributes` reports of a GPU: its identity and power limits (W)."""
        gpu = self._live().gpu(gpu_id)
        return {"uuid": gpu.uuid, "deviceName": gpu.sku.name, "curPowerLimit": round(gpu.limit_mw / 1000),
                "defaultPowerLimit": gpu.sku.default_w, "enforcedPowerLimit": round(gpu.limit_mw / 1000),
                "minPowerLimit": gpu.sku.min_w, "maxPowerLimit": gpu.sku.max_w}

    def add_gpu(self, group_id: int, gpu_id: int) -> None:
        engine = self._live()
        engine.gpu(gpu_id)
        engine._group(group_id).gpu_ids.append(gpu_id)

    def config_set_power_limit(self, group_id: int, watts: int) -> None:
        self._live().config_set(group_id, watts)

    def config_enforce(self, group_id: int) -> None:
        self._live().config_enforce(group_id)

    def latest_values(self, gpu_id: int, field_ids: list[int]) -> dict[int, float]:
        return self._live().latest_values(gpu_id, field_ids)

    def close(self) -> None:
        self._generation = -1


_CONFIG_USAGE = """\
Usage: dcgmi config
   dcgmi config --host <IP/FQDN> -g <groupId> --set [-e <0/1>] [-s <0/1>] [-a <mem,proc>] [-P <limit>] [-c <mode>]
   dcgmi config --host <IP/FQDN> -g <groupId> --get [-v] [-j]
   dcgmi config --host <IP/FQDN> -g <groupId> --enforce

Flags:
  -g  --group        groupId  The GPU group to query on the specified host.
  -j  --json                  Print the output in a json format
"""


class _Dcgmi:
    """The few `dcgmi` commands the probes run, in the hostengine's version's JSON shape."""

    def __init__(self, engine: Hostengine) -> None:
        self.engine = engine

    def run(self, argv: list[str]) -> tuple[str, str, int]:
        args = [a for a in argv if a not in ("-j", "--json")]
        as_json = len(args) != len(argv)
        if not self.engine.running:
            return "", "Error: unable to establish a connection to the specified host: localhost\n", 255
        if args[:2] in (["group", "--list"], ["group", "-l"]):
            return self._group_list(as_json), "", 0
        if args[:1] == ["config"] and "--get" in args:
            group_id = _flag_value(args, "-g", "--group")
            if group_id is None or not group_id.isdigit():
                return "", f"Error: invalid group id {group_id!r}.\n{_CONFIG_USAGE}", 1
            return self._config_get(int(group_id), as_json)
        if args[:1] == ["config"]:
            return "", _CONFIG_USAGE, 1
        return "", f"Error: unknown or removed command: dcgmi {shlex.join(argv)}\n", 1

    def _group_list(self, as_json: bool) -> str:
        groups = sorted(self.engine.groups.values(), key=lambda g: g.group_id)
        entries = [
            {"Group ID": str(g.group_id), "Group Name": g.name, "Entities": [f"GPU {i}" for i in g.gpu_ids]}
            for g in groups
        ]
        if as_json:
            return json.dumps({"body": entries, "header": ["GROUPS", f"{len(entries)} groups found."]}) + "\n"
        lines = [f"{len(entries)} groups found."]
        lines += [f"| Group ID {e['Group ID']} | {e['Group Name']} | {', '.join(e['Entities'])} |" for e in entries]
        return "\n".join(lines) + "\n"

    def _config_get(self, group_id: int, as_json: bool) -> tuple[str, str, int]:
        group = self.engine.groups.get(group_id)
        if group is None:
            return "", f"Error: group {group_id} not found. Return: Setting not configured\n", 1
        # one group of one GPU is what the agent creates; several GPUs report the first's values
        gpu_id = group.gpu_ids[0] if group.gpu_ids else None
        current = str(round(self.engine.gpu(gpu_id).limit_mw / 1000)) if gpu_id is not None else _NOT_SPECIFIED
        target = str(self.engine.targets[gpu_id]) if gpu_id in self.engine.targets else _NOT_SPECIFIED
        header = ["CONFIGURATION", group.name, f"Group of {len(group.gpu_ids)} GPUs"]
        if not as_json:
            return f"{group.name}\nPower Limit (W) | Current {current} | Target {target}\n", "", 0
        others = ("Sync Boost", "SM Application Clock", "Memory Application Clock", "ECC Mode", "Compute Mode")
        if tuple(int(x) for x in self.engine.version.split(".")[:2]) < (4, 5):  # 4.0–4.4: a list of {field: {Current, Target}}
            body: object = [{name: {"Current": _NOT_SPECIFIED, "Target": _NOT_SPECIFIED}} for name in others]
            body.insert(3, {"Power Limit (W)": {"Current": current, "Target": target}})  # type: ignore[attr-defined]
        else:  # 4.5+: a dict of field → {"children": {Current: {value}, Target: {value}}}
            def leaf(c, t):
                return {"children": {"Current": {"value": c}, "Target": {"value": t}}}
            body = {name: leaf(_NOT_SPECIFIED, _NOT_SPECIFIED) for name in others}
            body["Power Limit"] = leaf(current, target)  # type: ignore[index]
        return json.dumps({"body": body, "header": header}) + "\n", "", 0


def _flag_value(args: list[str], *names: str) -> str | None:
    for i, arg in enumerate(args):
        if arg in names and i + 1 < len(args):
            return args[i + 1]
        for name in names:
            if name.startswith("--") and arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None
