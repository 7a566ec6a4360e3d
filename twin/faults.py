"""Fault switches → the twin's components misbehave on purpose (README findings and deliberate bugs).

Every switch is off by default, so a default world behaves like the fixed, healthy system. A
world file sets them under `faults:`; a test flips them at run time through `Faults.set` or over
HTTP (`GET/PATCH /twin/v1/faults`, see `aiohttp_routes`). Components read the switch at the
moment it matters (each tick, each exec), so a flip takes effect on the next action, not on
restart. Each field's description is the documentation of what it reproduces.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

ApiFaultKind = Literal["429", "500", "503", "reset", "latency", "watch_drop"]


class FaultSwitches(BaseModel):
    """The catalogue of switches; `extra="forbid"` turns a typo in a world file into an error."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # --- README findings -------------------------------------------------------------------
    rbac_namespace_restricted: bool = Field(
        False,
        description="Finding #3: the chart made a namespaced Role (the world installs a Role and "
        "RoleBinding instead of the ClusterRole) but the agent was not given --namespace, so RBAC "
        "refuses its cluster-wide pod list with 403 Forbidden; every tick is skipped and "
        "k8s_list_failures_total grows. An agent started with --namespace is unaffected. Cluster-wide only.",
    )
    exec_oom_kills_agent: bool = Field(
        False,
        description="Finding #4: a `python` exec probe in the agent container OOM-kills it when its "
        "memory limit is below 256Mi: the probe exits 137 and the agent restarts (metrics reset, "
        "orphan recovery runs).",
    )
    cdi_rejects_uuid: bool = Field(
        False,
        description="Finding #7: the container runtime (CDI mode) rejects a pod that pins a GPU with "
        "NVIDIA_VISIBLE_DEVICES=<uuid|index> ('unresolvable CDI devices'); `all` still works. "
        "Enforced by the node at container start.",
    )
    gpu_assignment: Literal["random", "sequential"] = Field(
        "random",
        description="Finding #8: how the device plugin picks GPUs for a `nvidia.com/gpu` claim. "
        "`random` (seeded by the world) breaks per-index expectations so only multiset checks "
        "hold, as on the live node; `sequential` hands out the lowest free indices.",
    )
    dcgm_version: Literal["4.4", "4.5"] = Field(
        "4.5",
        description="Finding #9/#11: the hostengine's dcgmi JSON shape. 4.0–4.4 print `body` as a list "
        "with `Power Limit (W)` and flat Current/Target; 4.5+ print a dict with `Power Limit` → "
        "`children.Current.value`. `config --get -g all -j` fails with usage (exit 1) in both.",
    )
    dcgm_uninstall_leaves_caps: bool = Field(
        False,
        description="Finding #10: in DCGM mode the agent's SIGTERM restore sees an empty managed set "
        "(the 'dual-copy' bug) and restores nothing, so uninstalling leaves every GPU at its test cap.",
    )
    exec_preload_mangles_json: bool = Field(
        False,
        description="Finding #11: emulate kubernetes-client >= 35 with `_preload_content=True`, which "
        "hands back `str(dict)` for JSON-looking stdout: the twin's exec channel sends such stdout "
        "as a Python repr, so `json.loads` on it fails.",
    )
    nvml_no_permission: bool = Field(
        False,
        description="Every NVML limit write raises NVMLError_NoPermission, as for a non-root caller.",
    )
    dcgm_set_connection_lost_gpus: list[int] = Field(
        default_factory=list,
        description="B7: the next dcgmConfigSet on these DCGM gpu positions raises "
        "DCGM_ST_CONNECTION_NOT_VALID once (the agent must reconnect and retry).",
    )
    dcgm_enforce_fails_gpus: list[int] = Field(
        default_factory=list,
        description="B8: dcgmConfigEnforce on these DCGM gpu positions raises after a successful Set "
        "(cap live; dcgm_enforce_failures_total grows).",
    )

    # --- API transport faults (the client side must retry; see api_fault_middleware) --------
    api_fault_rate: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="The share of Kubernetes API requests (REST, exec, watch) that meet one of the "
        "`api_fault_kinds`, chosen at random from the world's seed: 0.05 is one request in twenty.",
    )
    api_fault_kinds: list[ApiFaultKind] = Field(
        default_factory=lambda: list(get_args(ApiFaultKind)),
        description="Which faults a faulted request meets (one at random): `429` TooManyRequests "
        "with Retry-After: 1, `500` InternalError, `503` ServiceUnavailable (all before the request "
        "is handled, as an overloaded API server or a proxy answers), `reset` the connection closed "
        "without an answer, `latency` the answer delayed by `api_latency_seconds`, `watch_drop` a "
        "watch that ends at once (the client must watch again). A kind that does not apply to a "
        "request (watch_drop on a plain GET) leaves it alone.",
    )
    api_latency_seconds: float = Field(
        1.0, ge=0.0, le=60.0, description="How long (wall-clock seconds) a `latency` fault delays its answer."
    )

    # --- deliberate bugs a correct scenario must catch -------------------------------------
    agent_ignores_conflicts: bool = Field(
        False, description="Bug: on a multi-pod GPU the agent applies the first pod's value, no counters."
    )
    agent_writes_wrong_gpu: bool = Field(
        False, description="Bug: the agent writes GPU i's cap to GPU (i+1) mod N."
    )
    agent_never_restores: bool = Field(
        False, description="Bug: SIGTERM restores nothing (caps stay after the agent pod is deleted)."
    )
    agent_never_counts: bool = Field(
        False, description="Bug: the agent never increments its conflict / safe-default / clamp counters."
    )
    agent_counts_processes: bool = Field(
        False, description="Bug: the agent counts compute processes instead of pods, so a TP worker's "
        "helper PIDs on one GPU look like several agreeing pods (multi_pod_gpu_total{agree} grows).",
    )
    agent_never_reconnects: bool = Field(
        False, description="Bug: a lost DCGM connection is not rebuilt; the write fails (apply_failures_total).",
    )
    agent_skips_orphan_recovery: bool = Field(
        False, description="Bug: a starting agent never restores the idle GPUs a previous agent capped.",
    )
    agent_writes_twice: bool = Field(
        False, description="Bug: every cap is written twice per tick (two writes per busy GPU per tick).",
    )
    planner_projects_every_dgd: bool = Field(
        False, description="Bug: a planner's projected power adds the other DGDs' workers (annotation × GPUs).",
    )
    planner_patches_foreign_pod: bool = Field(
        False, description="Bug: each planner also patches one worker pod of another DGD (cross-DGD contamination)."
    )
    agg_planner_runs_prefill: bool = Field(
        False,
        description="Bug: the agg planner also runs the PREFILL branch, which resolves to its only worker "
        "and patches the prefill limit before the decode branch patches it back (two log lines per tick).",
    )


class NodeSwitchesBase(BaseModel):
    """The switches one node sets for itself, over the twin's: any of `FaultSwitches`, unset = None."""

    model_config = ConfigDict(extra="forbid")

    def overrides(self) -> dict[str, Any]:
        return {name: value for name, value in self.model_dump().items() if value is not None}


if TYPE_CHECKING:
    NodeFaultSwitches = NodeSwitchesBase
else:  # the same names, types and documentation as FaultSwitches, every one optional
    NodeFaultSwitches = create_model(
        "NodeFaultSwitches", __base__=NodeSwitchesBase,
        **{name: (f.annotation | None, Field(None, description=f.description))
           for name, f in FaultSwitches.model_fields.items()},
    )


class UnknownFault(ValueError):
    """A run-time flip named a switch that does not exist."""


class Faults:
    """The live switch board of one twin; thread-safe (HTTP handlers and the clock both read it)."""

    def __init__(self, switches: FaultSwitches | dict[str, Any] | None = None) -> None:
        if isinstance(switches, dict):
            switches = FaultSwitches.model_validate(switches)
        self._switches = switches or FaultSwitches()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[dict[str, Any]], None]] = []

    def subscribe(self, fn: Callable[[dict[str, Any]], None]) -> None:
        """Call `fn(all switches)` after every change (the world mirrors node-owned switches)."""
        self._listeners.append(fn)

    def _changed(self) -> None:
        snapshot = self.as_dict()
        for fn in list(self._listeners):
            fn(snapshot)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._switches, name)

    def set(self, name: str, value: Any) -> None:
        """Flip one switch; unknown names and wrong types raise (UnknownFault / ValueError)."""
        if name not in FaultSwitches.model_fields:
            raise UnknownFault(f"unknown fault switch {name!r} — known: {', '.join(FaultSwitches.model_fields)}")
        with self._lock:
            setattr(self._switches, name, value)
        self._changed()

    def update(self, changes: dict[str, Any]) -> None:
        """Apply several flips atomically: all validate, or none is applied."""
        unknown = sorted(set(changes) - set(FaultSwitches.model_fields))
        if unknown:
            raise UnknownFault(f"unknown fault switch(es) {', '.join(unknown)}")
        with self._lock:
            merged = {**self._switches.model_dump(), **changes}
            self._switches = FaultSwitches.model_validate(merged)
        self._changed()

    def reset(self) -> None:
        with self._lock:
            self._switches = FaultSwitches()
        self._changed()

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return self._switches.model_dump()

    @staticmethod
    def describe() -> dict[str, str]:
        """switch name → what it reproduces (the documentation, also served over HTTP)."""
        return {name: field.description or "" for name, field in FaultSwitches.model_fields.items()}


class NodeFaults:
    """One node's view of the switch board: the node's own settings (from its world entry) over the
    twin's live `Faults`, so a run-time flip of the board reaches every node that does not set
    that switch itself."""

    def __init__(self, board: Faults, overrides: dict[str, Any]) -> None:
        unknown = sorted(set(overrides) - set(FaultSwitches.model_fields))
        if unknown:
            raise UnknownFault(f"unknown fault switch(es) {', '.join(unknown)}")
        self._board = board
        self._overrides = dict(overrides)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._board, name)

    def as_dict(self) -> dict[str, Any]:
        return {**self._board.as_dict(), **self._overrides}

    def subscribe(self, fn: Callable[[dict[str, Any]], None]) -> None:
        self._board.subscribe(lambda _switches: fn(self.as_dict()))


def aiohttp_routes(faults: Faults, prefix: str = "/twin/v1/faults") -> list:
    """Routes the API server mounts: GET → switches; PATCH {name: value} → flip; DELETE → reset."""
    from aiohttp import web

    async def get(_request: web.Request) -> web.Response:
        return web.json_response({"switches": faults.as_dict(), "descriptions": faults.describe()})

    async def patch(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            if not isinstance(body, dict):
                return web.json_response({"error": "body must be a JSON object {switch: value}"}, status=400)
            faults.update(body)
        except (UnknownFault, ValidationError, ValueError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"switches": faults.as_dict()})

    async def delete(_request: web.Request) -> web.Response:
        faults.reset()
        return web.json_response({"switches": faults.as_dict()})

    return [web.get(prefix, get), web.patch(prefix, patch), web.delete(prefix, delete)]


def api_fault_middleware(faults: Faults, rng: random.Random) -> Callable[..., Any]:
    """An aiohttp middleware that answers a share of the Kubernetes API requests with a transient
    fault (`api_fault_rate`, `api_fault_kinds`); the twin's own routes (/twin/…) are never faulted."""
    import asyncio

    from aiohttp import web

    def status(code: int, reason: str, message: str) -> web.Response:
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "reason": reason, "code": code}
        headers = {"Retry-After": "1"} if code in (429, 503) else {}
        return web.json_response(body, status=code, headers=headers)

    @web.middleware
    async def inject(request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        rate = faults.api_fault_rate
        if rate <= 0 or not request.path.startswith(("/api/", "/apis/")) or rng.random() >= rate:
            return await handler(request)
        kind = rng.choice(faults.api_fault_kinds) if faults.api_fault_kinds else "none"
        if kind == "429":
            return status(429, "TooManyRequests", "the twin is injecting faults (api_fault_rate); try again later")
        if kind == "500":
            return status(500, "InternalError", "an error on the server has prevented the request from succeeding (injected)")
        if kind == "503":
            return status(503, "ServiceUnavailable", "the server is currently unable to handle the request (injected)")
        if kind == "reset" and request.transport is not None:
            request.transport.abort()  # what a dropped connection looks like to the client
            raise ConnectionResetError("injected connection reset")
        if kind == "latency":
            await asyncio.sleep(faults.api_latency_seconds)
        if kind == "watch_drop" and request.query.get("watch") in ("1", "true"):
            response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            await response.prepare(request)
            await response.write_eof()  # the stream ends before any event, as a dropped watch does
            return response
        return await handler(request)

    return inject
