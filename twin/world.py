"""A world file (YAML) → a validated `World`: what the twin cluster contains and how it misbehaves.

A world says: the nodes (each with its GPUs — count, SKU, DCGM enumeration order — labels, taints
and fault switches of its own; `count: N` stands for N alike nodes), the environment
variant (kaim or target namespace / node label / state path, contract §0), the Power Agent
(installed?, generation, actuator, safe default, memory limit, `--namespace`), the DCGM
hostengine, the operator and the DGDs it runs (Path A), the planner generation, timings, the
fault switches and the seed. Defaults reproduce Path B of the live test (agent installed, NVML;
the five stub workers are applied by the scenarios, not the world).

Bad input is an error naming the file, line and column of the offending key
(`WorldError`, `file:line:col: what — what to do`); the CLI exits 2 on it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError

from .dcgm import dcgm_order
from .faults import FaultSwitches, NodeFaultSwitches
from .gpus import DEFAULT_SKU, UnknownSku, load_sku

VARIANTS: dict[str, dict[str, str]] = {
    "target": {"namespace": "dynamo-power-test", "node_label": "target",
               "state_host_path": "/var/lib/dynamo-power-agent-test"},
    "kaim": {"namespace": "kaim-dynamo-system", "node_label": "kaim",
             "state_host_path": "/var/lib/dynamo-power-agent-kaim-test"},
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Taint(_Strict):
    key: str = Field(min_length=1)
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class NodeSpec(_Strict):
    name: str = Field("twin-gpu-node", min_length=1)
    count: int = Field(1, ge=1, le=1024, description="this many alike nodes, named <name>-1 … <name>-N")
    gpus: int = Field(8, ge=1, le=64, description="GPUs on the node")
    sku: str = DEFAULT_SKU
    dcgm_order: str | list[int] = Field("reversed", description="DCGM gpuId → NVML index: reversed|same|rotated|[perm]")
    labels: dict[str, str] = Field(default_factory=dict, description="extra node labels")
    taints: list[Taint] = Field(default_factory=list, description="node taints (the GPU toleration covers nvidia.com/gpu)")
    faults: NodeFaultSwitches = Field(default_factory=NodeFaultSwitches,
                                      description="switches set on this node only, over the world's `faults`")

    @field_validator("name")
    @classmethod
    def _node_name(cls, value: str) -> str:
        # a node name becomes an object name on the API server and a folder of the node's view, so
        # it must be a Kubernetes name (DNS-1123 subdomain), with room for `-<count>`
        if len(value) > 240 or not _NODE_NAME.fullmatch(value):
            raise ValueError(f"{value!r} is not a Kubernetes node name: lowercase letters, digits, '-' and '.', "
                             "starting and ending with a letter or digit, at most 240 characters (e.g. gpu-node-1)")
        return value

    @field_validator("sku")
    @classmethod
    def _known_sku(cls, value: str) -> str:
        try:
            load_sku(value)
        except UnknownSku as exc:
            raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _order_fits(self) -> NodeSpec:
        dcgm_order(self.gpus, self.dcgm_order)  # raises ValueError with the reason
        if self.faults.rbac_namespace_restricted is not None:  # type: ignore[attr-defined]
            raise ValueError("faults.rbac_namespace_restricted is the chart's RBAC, which has no node scope: "
                             "set it under the world's `faults`")
        return self

    def expanded(self) -> list[NodeSpec]:
        """The nodes this entry stands for: itself, or `count` copies named `<name>-1` … `<name>-N`."""
        if self.count == 1:
            return [self]
        return [self.model_copy(update={"name": f"{self.name}-{i}", "count": 1}) for i in range(1, self.count + 1)]


class AgentSpec(_Strict):
    install: bool = True
    generation: Literal["PA-9790", "PA-optin", "PA-late"] = "PA-9790"
    actuator: Literal["nvml", "dcgm"] = "nvml"
    safe_default_watts: int = Field(280, gt=0)
    prometheus_port: int = Field(9100, ge=1, le=65535)
    memory_limit: str = "256Mi"
    namespace_restricted: bool = Field(False, description="pass --namespace (a Role instead of a ClusterRole)")
    dcgm_enforce: bool = True
    program: str | None = Field(None, description="run the agent container as this real program: a folder holding "
                                "power_agent.py (or `reference`, the twin's own agent as a process)")


REFERENCE_AGENT = "reference"  # `agent: {program: reference}` — twin/power_agent/ run as a program


def agent_program_dir(program: str, base: Path | None = None) -> Path:
    """The folder an `agent.program` names (relative to `base`); ValueError saying what is wrong."""
    if program == REFERENCE_AGENT:
        return Path(__file__).resolve().parent / "power_agent"
    folder = Path(program).expanduser()
    if not folder.is_absolute() and base is not None:
        folder = base / folder
    if not folder.is_dir():
        raise ValueError(f"agent program {program!r}: no such folder — give the folder holding power_agent.py "
                         f"(a checkout's deploy/power-agent), or `{REFERENCE_AGENT}`")
    if not (folder / "power_agent.py").is_file():
        raise ValueError(f"agent program {program!r}: {folder} has no power_agent.py — give the folder that holds it "
                         f"(a checkout's deploy/power-agent)")
    return folder.resolve()


class HostengineSpec(_Strict):
    install: bool = Field(False, description="the nvidia-dcgm-standalone DaemonSet (needed by actuator: dcgm)")


class ServiceLimit(_Strict):
    gpus: int = Field(1, ge=1)
    replicas: int = Field(1, ge=0)
    limit_watts: int = Field(gt=0)


class DgdSpec(_Strict):
    """A DGD in the shape of the live test's 30/31/32 manifests (rendered as v1alpha1)."""

    name: str
    mode: Literal["disagg", "agg"]
    prefill: ServiceLimit | None = None
    decode: ServiceLimit
    total_gpu_power_limit: int = Field(gt=0)
    planner_interval_seconds: float = Field(60.0, gt=0)
    enable_power_awareness: bool = True

    @model_validator(mode="after")
    def _disagg_has_prefill(self) -> DgdSpec:
        if self.mode == "disagg" and self.prefill is None:
            raise ValueError(f"DGD {self.name}: mode disagg needs a `prefill` service")
        return self


class OperatorSpec(_Strict):
    install: bool = False
    propagate_dgd_labels: bool = Field(True, description="copy DGD labels (purpose=…) onto its pods; unverified upstream")
    planner_generation: Literal["pod-patching", "dgd-owned"] = "pod-patching"


class Timing(_Strict):
    pod_startup_seconds: float = Field(2.0, ge=0)
    agent_tick_seconds: float = Field(15.0, gt=0, description="the contract fixes 15 s; change only to experiment")
    worker_model_load_seconds: float = Field(20.0, ge=0, description="Dynamo worker start → CUDA contexts open")


class World(_Strict):
    name: str = "path-b"
    seed: int = 0
    variant: Literal["target", "kaim"] = "target"
    nodes: list[NodeSpec] = Field(default_factory=lambda: [NodeSpec()], min_length=1)
    agent: AgentSpec = Field(default_factory=AgentSpec)
    hostengine: HostengineSpec = Field(default_factory=HostengineSpec)
    operator: OperatorSpec = Field(default_factory=OperatorSpec)
    dgds: list[DgdSpec] = Field(default_factory=list)
    timing: Timing = Field(default_factory=Timing)
    faults: FaultSwitches = Field(default_factory=FaultSwitches)

    @model_validator(mode="after")
    def _consistent(self) -> World:
        self.nodes = [one for spec in self.nodes for one in spec.expanded()]
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"node names must be unique, got {names}")
        if self.dgds and not self.operator.install:
            raise ValueError("dgds need `operator: {install: true}` (nothing else turns a DGD into pods)")
        if self.agent.program is not None and self.timing.agent_tick_seconds != 15:
            raise ValueError("timing.agent_tick_seconds: a real agent program ticks on its own 15 s constant "
                             "— leave it at 15 with agent.program")
        if self.agent.actuator == "dcgm" and not self.hostengine.install:
            raise ValueError("agent.actuator dcgm needs `hostengine: {install: true}`")
        return self

    @property
    def namespace(self) -> str:
        return VARIANTS[self.variant]["namespace"]

    @property
    def node_label(self) -> str:
        return VARIANTS[self.variant]["node_label"]

    @property
    def state_host_path(self) -> str:
        return VARIANTS[self.variant]["state_host_path"]


class WorldError(ValueError):
    """A world file is wrong; the message is `file:line:col: what — what to do`."""


# The profiles ship inside the package (setup.py maps examples/profiles there); an installed package
# is a folder on disk (pip unpacks wheels), so the resource is a plain path.
PROFILES_DIR = Path(str(resources.files(__package__).joinpath("profiles")))


#: A world file is a page of YAML; past these it is not one (and the parser would take seconds to
#: fail on pathological nesting, or hit Python's recursion limit).
MAX_WORLD_BYTES = 1_000_000
MAX_WORLD_DEPTH = 64
# Control characters the YAML reader would refuse without a line number, or take as line ends
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufffe\uffff]|\r(?!\n)")


def load_world(path: str | Path) -> World:
    """Read and validate a world file; every problem becomes one `WorldError` line per issue."""
    path = Path(path)
    try:
        if path.is_file() and path.stat().st_size > MAX_WORLD_BYTES:
            raise WorldError(f"{path}:1:1: the world file is over {MAX_WORLD_BYTES // 1_000_000} MB — a world is a page of YAML")
        data = path.read_bytes()
    except OSError as exc:
        raise WorldError(f"{path}:1:1: cannot read the world file ({exc.strerror}) — check the path") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _line_col(data[: exc.start].decode("utf-8", "replace"), len(data[: exc.start].decode("utf-8", "replace")))
        raise WorldError(f"{path}:{line}:{col}: byte 0x{data[exc.start]:02x} is not UTF-8 — save the world file as UTF-8") from None
    return parse_world(text, str(path), base=path.parent)


def _line_col(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _text_problem(text: str, filename: str) -> str | None:
    """A control character, a lone CR or nesting past MAX_WORLD_DEPTH, at its line and column."""
    control = _CONTROL.search(text)
    if control is not None:
        line, col = _line_col(text, control.start())
        what = "a lone CR line end" if control.group() == "\r" else f"control character U+{ord(control.group()):04X}"
        return f"{filename}:{line}:{col}: {what} in the world file — remove it"
    depth, quote = 0, ""
    for number, row in enumerate(text.split("\n"), 1):
        indent = len(row) - len(row.lstrip(" "))
        if indent > 2 * MAX_WORLD_DEPTH:
            return f"{filename}:{number}:{indent + 1}: the world file nests deeper than {MAX_WORLD_DEPTH} levels — flatten it"
        for column, char in enumerate(row, 1):
            if quote:
                quote = "" if char == quote else quote
            elif char in "\"'":
                quote = char
            elif char == "#":
                break
            elif char in "[{":
                depth += 1
                if depth > MAX_WORLD_DEPTH:
                    return f"{filename}:{number}:{column}: the world file nests deeper than {MAX_WORLD_DEPTH} levels — flatten it"
            elif char in "]}":
                depth = max(depth - 1, 0)
        quote = ""
    return None


def parse_world(text: str, filename: str = "<world>", base: Path | None = None) -> World:
    """Validate a world's text; a relative `agent.program` is resolved against `base` (the file's folder)."""
    world = _validated(text, filename).model_copy(deep=True)  # a copy: callers change their world
    if world.agent.program is not None:
        try:
            world.agent.program = str(agent_program_dir(world.agent.program, base))
        except ValueError as exc:
            line, col = _position(_tree(text, filename), ["agent", "program"])
            raise WorldError(f"{filename}:{line}:{col}: `agent.program`: {exc}") from None
    return world


@functools.lru_cache(maxsize=32)
def _validated(text: str, filename: str) -> World:
    """The world a text describes, read once per process for each text: every twin a process
    starts reads its world file (the tests start hundreds), and the YAML reader that keeps
    positions for the messages takes 7-17 ms for a shipped world where copying the model takes a
    fraction of one. A text with a problem raises each time (errors are not cached)."""
    data = _tree(text, filename)
    try:
        return World.model_validate(_plain(data))
    except ValidationError as exc:
        lines = [_describe(filename, data, err) for err in exc.errors()]
        raise WorldError("\n".join(lines)) from None


def _tree(text: str, filename: str) -> dict:
    """The world text read into ruamel's tree (with the positions the messages name)."""
    problem = _text_problem(text, filename)
    if problem is not None:
        raise WorldError(problem)
    yaml = YAML(typ="rt")
    try:
        data = yaml.load(text)
    except RecursionError:
        raise WorldError(f"{filename}:1:1: the world file nests too deeply — flatten it") from None
    except ValueError:  # an integer past Python's int-string conversion limit
        long = re.search(r"\d{4301,}", text)
        line, col = _line_col(text, long.start()) if long else (1, 1)
        raise WorldError(f"{filename}:{line}:{col}: a number of more than 4300 digits — check the numbers in the world file") from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise WorldError(f"{filename}:{line}:{col}: not valid YAML: {exc.problem} — fix the syntax") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise WorldError(f"{filename}:1:1: a world file is a mapping of keys — found {type(data).__name__}")
    return data


def _plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def _describe(filename: str, data: Any, err: Mapping[str, Any]) -> str:
    loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith(("function-", "literal[")))]
    line, col = _position(data, loc)
    key = ".".join(str(p) for p in loc) or "(top level)"
    if err["type"] == "extra_forbidden":
        hint = "remove it or check the spelling"
        return f"{filename}:{line}:{col}: unknown key `{key}` — {hint}"
    message = err["msg"].removeprefix("Value error, ")
    return f"{filename}:{line}:{col}: `{key}`: {message} — see docs/design/twin-gpu.md (worlds)"


def _position(data: Any, loc: list) -> tuple[int, int]:
    """Line/column (1-based) of the deepest node of `loc` that exists in the ruamel tree."""
    line, col, node = 1, 1, data
    for part in loc:
        lc = getattr(node, "lc", None)
        try:
            if isinstance(node, dict) and part in node:
                if lc is not None:
                    line, col = lc.key(part)[0] + 1, lc.key(part)[1] + 1
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                if lc is not None:
                    line, col = lc.item(part)[0] + 1, lc.item(part)[1] + 1
                node = node[part]
            else:
                break
        except (KeyError, IndexError, TypeError):
            break
    return line, col


def profile(name: str) -> Path:
    """The path of a shipped world profile (`path-a`, `path-b`, …)."""
    return PROFILES_DIR / f"{name}.yaml"


def main(argv: list[str] | None = None) -> int:
    """`python -m stepgraph.twin.world FILE…`: validate world files; 0 if all are good, else 2."""
    import sys

    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m stepgraph.twin.world WORLD.yaml [...]", file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        try:
            world = load_world(path)
        except WorldError as exc:
            print(exc, file=sys.stderr)
            status = 2
        else:
            print(f"{path}: ok — {world.name}: {len(world.nodes)} node(s), {len(world.dgds)} DGD(s)")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
