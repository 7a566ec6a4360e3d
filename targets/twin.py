"""`--target twin` (the default): a world profile → an embedded twin cluster and a session on its
virtual clock, whose teardown verifies that the run left nothing behind.

Options (`--target-option KEY=VALUE`, or the environment): `world` — a profile name from
examples/profiles (`path-b`, `path-b-dcgm`, `path-a`, `path-a-dcgm`…) or a world file path
(`STEPGRAPH_WORLD`; default `path-b`); `seed` — overrides the world's seed; `actuator` — `nvml` or
`dcgm` (the latter also installs the hostengine); `variant` — `target` or `kaim` (namespace and
node label, contract §0); `faults` — switches to flip at start, as a YAML
flow mapping (`{agent_ignores_conflicts: true}`); `world_dgds` — `own`
(default: the catalog creates the DGDs from our manifests, so the run owns and removes them) or
`keep` (the world's DGDs are pre-deployed, as on a prepared live node); `metrics_via` — `exec`
(the probe inside the agent pod, default) or `proxy` (the API server's pod proxy); `leftovers` —
`remove` (default: objects another run left are removed first) or `adopt` (kept, as if prepared);
`agent` — a folder holding `power_agent.py` (or `reference`): the agent container runs it as a
real process, on the scaled clock; `clock` — `virtual` (default without a program), `real`, or
`scaled[:RATE]` (default with one; a lower rate leaves a loaded machine more time per tick).

At stop the target checks, on the twin itself, that every object the run created in the test
namespace is gone and every GPU is back at its default limit; if not, stopping fails the run
with the list of what was left — the twin is stopped either way.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from stepgraph.dsl import DEFAULT_PLANNER_TICK_SECONDS, ClockSession, Session, TargetConfigError, TargetSession

from .leftovers import leftover_option
from .world_facts import WorldFacts, keep_world_facts, kept_world_facts, world_digest

# The cluster itself (API server, aiohttp, controllers, kubelets) is imported by `start`, and the
# selector parser by `nodes`. The world file's model and the YAML parser are imported only to
# validate a world: a world already validated, unchanged, is known by its kept facts (world_facts),
# so collecting the scenarios of a run gates them without importing either.
if TYPE_CHECKING:
    from stepgraph.twin import Twin
    from stepgraph.twin.process.reconciles import ReconcileTicks
    from stepgraph.twin.world import World

CHECKED_RESOURCES = ("pods", "configmaps", "services", "daemonsets.apps", "dynamographdeployments.nvidia.com")


class TeardownError(AssertionError):
    """The run left objects behind or a GPU off its default limit."""


def world_capabilities(world: World) -> set[str]:
    """What scenarios may use on a twin built from `world`."""
    caps = {"k8s", "k8s-write", "nvml", "twin", f"variant-{world.variant}", f"agent-{world.agent.generation.lower()}",
            # only the twin has a fault switch board, counts cap writes, and may be disrupted at will
            "twin-faults", "cap-write-count", "disruptive", f"actuator-{world.agent.actuator}"}
    if world.agent.install:
        caps.add("agent")
    if world.agent.actuator == "dcgm" and world.hostengine.install:
        caps.add("dcgm")
    if world.operator.install:
        caps.add("path-a")
        caps.add(f"planner-{world.operator.planner_generation}")
        if world.operator.planner_generation == "pod-patching":
            caps.add("planner")
    else:
        caps.add("path-b")
    return caps


def world_name(options: Mapping[str, str], env: Mapping[str, str]) -> str:
    """The world option: a profile name or a world file."""
    return options.get("world") or env.get("STEPGRAPH_WORLD") or "path-b"


def world_file(name: str) -> Path:
    """The file a world option names: itself, or the shipped profile of that name."""
    from stepgraph.twin.world import profile

    return Path(name) if name.endswith((".yaml", ".yml")) else profile(name)


def resolve_world(options: Mapping[str, str], env: Mapping[str, str]) -> World:
    """The world named by the options (or STEPGRAPH_WORLD), with seed, faults and DGD overrides."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    from stepgraph.twin.world import World, WorldError, agent_program_dir, load_world

    name = world_name(options, env)
    path = world_file(name)
    try:
        world = load_world(path)
    except WorldError as exc:
        raise TargetConfigError(f"twin world: {exc}") from None
    data = world.model_dump()
    if "seed" in options:
        try:
            data["seed"] = int(options["seed"])
        except ValueError:
            raise TargetConfigError(f"twin: seed={options['seed']!r} is not an integer — e.g. seed=7") from None
    if options.get("faults"):
        try:
            flips = YAML(typ="safe", pure=True).load(options["faults"])
        except YAMLError:
            flips = None
        if not isinstance(flips, dict):
            raise TargetConfigError(f"twin: faults={options['faults']!r} — write a YAML mapping, e.g. faults={{nvml_no_permission: true}}")
        _check_fault_switches(flips)
        data["faults"] = {**data["faults"], **flips}
    actuator = options.get("actuator")
    if actuator is not None:
        if actuator not in ("nvml", "dcgm"):
            raise TargetConfigError(f"twin: actuator={actuator!r} — use nvml or dcgm")
        data["agent"]["actuator"] = actuator
        data["hostengine"]["install"] = data["hostengine"]["install"] or actuator == "dcgm"
    variant = options.get("variant")
    if variant is not None:
        if variant not in ("target", "kaim"):
            raise TargetConfigError(f"twin: variant={variant!r} — use target or kaim")
        data["variant"] = variant
    if options.get("agent"):
        try:
            data["agent"]["program"] = str(agent_program_dir(options["agent"], Path.cwd()))
        except ValueError as exc:
            raise TargetConfigError(f"twin: agent={options['agent']}: {exc}") from None
    dgds = options.get("world_dgds", "own")
    if dgds not in ("own", "keep"):
        raise TargetConfigError(f"twin: world_dgds={dgds!r} — use own or keep")
    if dgds == "own":
        data["dgds"] = []
    try:
        return World.model_validate(data)
    except ValueError as exc:
        raise TargetConfigError(f"twin: {' '.join(str(exc).split())}") from None


def _check_fault_switches(flips: dict[object, object]) -> None:
    """A `faults=` switch the twin does not have, or a value it does not take, named with the
    switches there are (a misspelt switch would otherwise be a validation dump)."""
    from pydantic import ValidationError

    from stepgraph.twin.faults import FaultSwitches

    known = list(FaultSwitches.model_fields)
    for name in flips:
        if name not in FaultSwitches.model_fields:
            close = difflib.get_close_matches(str(name), known, n=1)
            meant = f"did you mean {close[0]!r}? " if close else ""
            raise TargetConfigError(f"twin: faults: the twin has no fault switch {name!r} — {meant}its switches: {', '.join(known)}")
    try:
        FaultSwitches.model_validate(flips)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = ".".join(str(part) for part in first["loc"])
        default = FaultSwitches.model_fields[str(first["loc"][0])].get_default(call_default_factory=True)
        raise TargetConfigError(
            f"twin: faults: {name}={first.get('input')!r}: {first['msg']} — give it a value of its kind; its default is {default!r}"
        ) from None


def _default_api_fault(name: str, value: object) -> bool:
    from stepgraph.twin.faults import FaultSwitches

    return name.startswith("api_") and FaultSwitches.model_fields[name].get_default(call_default_factory=True) == value


def _daemonset_owned(obj: dict) -> bool:
    return any(ref.get("kind") == "DaemonSet" for ref in obj["metadata"].get("ownerReferences") or [])


class ProgramTickSession(Session):
    """The session of a world whose agent is a real program: its agent tick is the program's own,
    the fixed wait plus its typical reconcile's work on the twin's clock, measured from its recent
    ticks (`ReconcileTicks`), so `N agent ticks` means to a scenario what N ticks are to the program."""

    reconciles: ReconcileTicks | None = None

    @property  # type: ignore[override]
    def tick_seconds(self) -> float:
        return self._wait_seconds + (self.reconciles.typical_seconds() if self.reconciles is not None else 0.0)

    @tick_seconds.setter
    def tick_seconds(self, seconds: float) -> None:
        self._wait_seconds = seconds

    @property  # type: ignore[override]
    def reconcile_seconds(self) -> float:
        """How much later than N typical ticks the N-th tick's change can land: the tick under way
        when a window opens may be the slowest seen, and so may the reconcile that applies it."""
        if self.reconciles is None:
            return 0.0
        return 2 * self.reconciles.longest_seconds() - self.reconciles.typical_seconds()

    @reconcile_seconds.setter
    def reconcile_seconds(self, seconds: float) -> None:
        pass  # measured, never set: the dataclass's __init__ passes its default here


class TwinTarget:
    """The `twin` target (entry point `stepgraph.targets: twin`)."""

    name = "twin"
    verifies_cleanup = True  # stop() checks the twin itself for leftovers and capped GPUs
    #: Every `--target-option` key the twin takes (the language rejects any other).
    options: ClassVar[dict[str, str]] = {
        "world": "path-b, path-b-dcgm, path-a or a world file (.yaml)",
        "seed": "an integer",
        "faults": "a YAML mapping of fault switches, e.g. {nvml_no_permission: true}",
        "actuator": "nvml or dcgm",
        "variant": "target or kaim",
        "world_dgds": "own or keep",
        "metrics_via": "exec or proxy",
        "agent": "a folder holding power_agent.py, or `reference`: run the agent as that real program",
        "leftovers": "remove or adopt",
        "clock": "virtual, real or scaled[:RATE]",
    }

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = dict(os.environ if env is None else env)
        self._options: Mapping[str, str] | None = None  # what `configure` was given last
        self._world: World | None = None
        self._facts: WorldFacts | None = None
        self.metrics_via = "exec"
        self.twin: Twin | None = None
        self.clock: str | None = None
        self._before: dict[str, set[str]] = {}

    @property
    def world(self) -> World | None:
        """The configured world (validated on first use when `configure` knew it by its kept
        facts); None before `configure`."""
        if self._world is None and self._options is not None:
            self._world = resolve_world(self._options, self._env)
        return self._world

    def configure(self, options: Mapping[str, str]) -> None:
        self._options, self._world = options, None
        name = world_name(options, self._env)
        self._facts = kept_world_facts(name, options)
        if self._facts is None:  # validate the world (a bad one raises here), then keep what gating needs
            path = world_file(name)
            digest = world_digest(path)
            world = self.world
            assert world is not None
            self._facts = WorldFacts(frozenset(world_capabilities(world)), program=world.agent.program is not None)
            keep_world_facts(name, options, path, digest, self._facts)
        self.clock = options.get("clock")
        if self.clock is not None:
            rate = self.clock.partition(":")[2]
            if self.clock not in ("virtual", "real", "scaled") and not (
                    self.clock.startswith("scaled:") and rate.replace(".", "", 1).isdigit() and float(rate) > 0):
                raise TargetConfigError(f"twin: clock={self.clock!r} — use virtual, real or scaled[:RATE], e.g. scaled:25")
            if self.clock == "virtual" and self._facts.program:
                raise TargetConfigError("twin: clock=virtual cannot run a real agent program — use scaled[:RATE] or real")
        self.metrics_via = options.get("metrics_via", "exec")
        if self.metrics_via not in ("exec", "proxy"):
            raise TargetConfigError(f"twin: metrics_via={self.metrics_via!r} — use exec or proxy")

    @property
    def capabilities(self) -> frozenset[str]:
        if self._facts is None:
            self.configure({})
        assert self._facts is not None
        return self._facts.capabilities

    def preload(self) -> None:
        """Import the cluster, and the official client the steps reach it with, so that the world
        processes `stepgraph run` forks after this start with them loaded, not each on its own.
        The client loads each API class and model on first use; these are the ones the steps use
        on the twin (pods, the agent's DaemonSet, the DGD custom objects): importing one no world
        uses would only hold up every world's start. The API server's checks of the kinds every
        world writes are built here too, for the same reason."""
        import kubernetes.config
        import kubernetes.dynamic
        import kubernetes.stream
        import kubernetes.watch  # noqa: F401
        import trustme  # noqa: F401  (the twin's own CA, made at start)
        from kubernetes import client

        from stepgraph.twin import world_install  # noqa: F401
        from stepgraph.twin.apiserver import schemas
        from stepgraph.twin.tls import TwinCA

        schemas.preload()
        TwinCA().ca_pem  # noqa: B018  a CA made and dropped: it loads the crypto backend each world's CA needs
        for name in ("CoreV1Api", "AppsV1Api", "CustomObjectsApi",
                     "V1Pod", "V1PodList", "V1Node", "V1NodeList", "V1ConfigMap", "V1DaemonSet", "V1Status"):
            getattr(client, name)

    def nodes(self, selector: str) -> list[str]:
        """The world's nodes whose labels (as the twin will give them) match the label selector."""
        from stepgraph.twin.apiserver.errors import ApiError
        from stepgraph.twin.apiserver.selectors import parse_label_selector
        from stepgraph.twin.world_install import node_config

        if self._options is None:
            self.configure({})
        assert self.world is not None
        try:
            matches = parse_label_selector(selector)
        except ApiError as exc:
            raise TargetConfigError(f"twin: --nodes {selector!r}: {exc.message} — write a label selector, "
                                    "e.g. power-test/node=target") from None
        return [spec.name for spec in self.world.nodes if matches(node_config(self.world, spec).labels)]

    def start(self, options: Mapping[str, str]) -> TargetSession:
        from stepgraph.twin.world_install import build_twin

        world = self._configured(options)
        twin = build_twin(world, clock=self._clock_kind(world))
        try:
            twin.start()
        except BaseException:
            # Cut short (Ctrl-C, a failed start hook): no session exists, so no stop() will come —
            # what did start (the server's thread, programs, the work folder) is stopped here.
            twin.stop()
            raise
        self.twin = twin
        self._before = self._objects()
        session_type = ProgramTickSession if world.agent.program is not None else Session
        session = session_type(clock=self.twin.clock, kubeconfig=str(self.twin.kubeconfig_path), **self._session_fields(world, options))
        if isinstance(session, ProgramTickSession):
            session.reconciles = self.twin.processes.reconciles
        return session

    def clock_session(self, options: Mapping[str, str]) -> ClockSession:
        """For the scenarios that need none of the twin's capabilities: a clock of the kind the twin
        would run on, the world's ticks and the facts a started twin gives, without the twin —
        whose start (its cluster, kubelets and programs) is about a second such a run would spend
        on nothing. A program world's agent tick is then the program's fixed wait: no program runs
        to measure its reconciles."""
        from stepgraph.twin.clock import make_clock

        world = self._configured(options)
        return ClockSession(clock=make_clock(self._clock_kind(world)), **self._session_fields(world, options))

    def _configured(self, options: Mapping[str, str]) -> World:
        """The world of `options`: configured again only for options other than those it was
        configured with (the gating, the clock session and the start of one run pass the same),
        so the world file is read and validated once a run."""
        if self._options is None or (options and dict(options) != dict(self._options)):
            self.configure(options)
        world = self.world
        assert world is not None
        return world

    def _clock_kind(self, world: World) -> str:
        """The clock asked for, else the one the twin would run the world on."""
        from stepgraph.twin.clock import default_kind

        return self.clock or default_kind(world.agent.program is not None)

    def _session_fields(self, world: World, options: Mapping[str, str]) -> dict[str, Any]:
        facts = {
            "target": "twin",
            # a program world is its own column and expectation: its outcomes are a real program's
            "world": world.name if world.agent.program is None else f"{world.name}+process",
            "seed": world.seed,
            "variant": world.variant,
            "namespace": world.namespace,
            "node": world.nodes[0].name,
            "actuator": world.agent.actuator,
            "agent_generation": world.agent.generation,
            "path": "A" if world.operator.install else "B",
            "metrics_via": self.metrics_via,
            **({"agent_program": world.agent.program, "clock": self.clock or "scaled"}
               if world.agent.program is not None else {}),
            "leftovers": leftover_option(options),
            "faults": {
                k: v for k, v in world.faults.model_dump().items() if v not in (False, [], "seeded", "4.5") and not _default_api_fault(k, v)
            },
        }
        return {
            "tick_seconds": world.timing.agent_tick_seconds,
            "planner_tick_seconds": max((d.planner_interval_seconds for d in world.dgds), default=DEFAULT_PLANNER_TICK_SECONDS),
            "capabilities": set(world_capabilities(world)),
            "facts": facts,
        }

    def _objects(self) -> dict[str, set[str]]:
        assert self.twin is not None and self.world is not None
        found: dict[str, set[str]] = {}
        for resource in CHECKED_RESOURCES:
            try:
                items = self.twin.store.list(resource, self.world.namespace)
            except Exception:
                items = []
            # A DaemonSet's pods come and go with it (a restarted agent or hostengine is a new pod
            # under a new name); the DaemonSet itself is what the run must not leave behind.
            found[resource] = {obj["metadata"]["name"] for obj in items if not _daemonset_owned(obj)}
        return found

    def leftovers(self) -> list[str]:
        """What the run created and did not remove, and every GPU not at its default limit."""
        assert self.twin is not None
        problems = [
            f"{resource} {name} was created by the run and is still there"
            for resource, names in self._objects().items()
            for name in sorted(names - self._before.get(resource, set()))
        ]
        boards = [devices.board for devices in self.twin.gpu.directory]  # type: ignore[attr-defined]
        where = (lambda board: f" on node {board.node_name}") if len(boards) > 1 else (lambda board: "")
        problems += [
            f"GPU {gpu.index}{where(board)} is at {gpu.limit_w} W, not its default {gpu.default_mw // 1000} W"
            for board in boards
            for gpu in board.gpus
            if gpu.limit_mw != gpu.default_mw
        ]
        return problems

    def stop(self, session: TargetSession) -> None:
        if isinstance(session, ClockSession):
            close = getattr(session.clock, "close", None)  # a real-time clock's timer thread, a scaled one's file
            if close is not None:
                close()
            return
        if self.twin is None:
            return
        try:
            problems = self.leftovers()
        finally:
            self.twin.stop()
            self.twin = None
        if problems:
            raise TeardownError("the run did not clean up after itself:\n  - " + "\n  - ".join(problems))
