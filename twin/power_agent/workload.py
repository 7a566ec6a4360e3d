"""The agent DaemonSet pod's container → a running `PowerAgent` on the twin clock.

Matched by the pod label `app.kubernetes.io/component=power-agent`. On start the container's
command line is parsed (with `$(VAR)` expansion from its env, downward-API fields included), the
actuator is built against this node's devices, orphan recovery runs, and `reconcile_once` fires
now and then every 15 s. Graceful stop = SIGTERM restore; a hard kill restores nothing. Exec runs
probe commands (`probe_exec`); the metrics are served on the `--prometheus-port` (9100).
"""

from __future__ import annotations

from typing import Any

from ..apiserver.auth import Request
from ..apiserver.errors import ApiError
from ..dcgm import DcgmError
from ..devices import DeviceDirectory, NodeDevices
from ..faults import Faults
from ..probe_exec import ProbeContext, run_probe
from ..workloads import ExecResult, HttpResponse, Workload, WorkloadContext
from .actuators import DcgmActuator, NvmlActuator
from .agent import RECONCILE_INTERVAL_S, AgentConfig, PodListError, PowerAgent
from .cli import AgentCli, CliError, parse
from .metrics import CONTENT_TYPE, AgentMetrics
from .policy import GENERATIONS
from .state import STATE_DIR, STATE_FILE, ManagedState, host_path_for

COMPONENT_LABEL = ("app.kubernetes.io/component", "power-agent")
GENERATION_ANNOTATION = "twin.stepgraph.dev/agent-generation"
OOM_THRESHOLD_BYTES = 256 * 1024 * 1024


def is_agent_pod(pod: dict, container: dict) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(COMPONENT_LABEL[0]) == COMPONENT_LABEL[1]


def container_env(ctx: WorkloadContext) -> dict[str, str]:
    """Literal env plus the downward-API fields the chart uses (nodeName, namespace, name)."""
    fields = {
        "spec.nodeName": ctx.node.name,
        "metadata.namespace": ctx.namespace,
        "metadata.name": ctx.pod_name,
        "metadata.uid": ctx.pod_uid,
    }
    env: dict[str, str] = {}
    for item in ctx.container.get("env") or []:
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif (path := ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")) in fields:
            env[item["name"]] = fields[path]
    return env


NON_ROOT_IMAGES = ("vllm-runtime",)  # images whose default user is not root (contract §7)


def is_privileged(container: dict) -> bool:
    """May this container write NVML power limits? Only as root: `privileged` alone is not enough
    (the vllm-runtime user gets NoPermission even when privileged, §7). Without `runAsUser` the
    image's default user decides: root, except for the known non-root images."""
    user = (container.get("securityContext") or {}).get("runAsUser")
    if user is not None:
        return user == 0
    return not any(name in str(container.get("image", "")) for name in NON_ROOT_IMAGES)


def memory_limit_bytes(container: dict) -> int | None:
    raw = ((container.get("resources") or {}).get("limits") or {}).get("memory")
    if raw is None:
        return None
    units = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "K": 1000, "M": 1000**2, "G": 1000**3}
    text = str(raw)
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * factor)
    return int(float(text))


LOOPBACK = ("localhost", "127.0.0.1")


def hostengine_reachable(host: str, store: Any | None, own_namespace: str) -> bool:
    """Does `--dcgm-host` name something that answers on this node? Loopback, or a Service
    (`<svc>`, `<svc>.<ns>`, `<svc>.<ns>.svc[.cluster.local]`) that exists in the store."""
    if host in LOOPBACK or store is None:
        return True
    parts = host.split(".")
    namespace = parts[1] if len(parts) > 1 else own_namespace
    try:
        store.get("services", namespace, parts[0])
    except Exception:
        return False
    return True


def build_agent(
    cli: AgentCli,
    devices: NodeDevices,
    generation: str,
    list_pods,
    read_cgroup,
    log,
    faults: Faults,
    visible: tuple[str, ...] | None = None,
    privileged: bool = True,
    state_path: str | None = None,
    store: Any | None = None,
    namespace: str = "default",
) -> PowerAgent:
    """Assemble a PowerAgent over a node's devices (used by the workload and by the tests)."""
    metrics = AgentMetrics(
        with_enforce_counter=generation != "PA-late", counting_disabled=lambda: faults.agent_never_counts
    )
    state = ManagedState(devices.files, state_path)
    nvml = devices.nvml(visible, privileged).as_module()
    if cli.actuator == "dcgm":
        def connect():
            engine = devices.hostengine
            if engine is None or not hostengine_reachable(cli.dcgm_host, store, namespace):
                raise DcgmError(-21, f"unable to connect to hostengine at {cli.dcgm_host}:{cli.dcgm_port}")
            return engine.connect()
        actuator: NvmlActuator | DcgmActuator = DcgmActuator(connect, cli.dcgm_enforce, nvml, metrics, state, log,
                                                                  reconnect_disabled=lambda: faults.agent_never_reconnects)
    else:
        actuator = NvmlActuator(nvml, metrics, state, log)
    config = AgentConfig(cli.safe_default_watts, cli.node_name or devices.node_name, cli.namespace, generation, cli.actuator)
    return PowerAgent(config, actuator, metrics, state, list_pods, read_cgroup, log, faults)


class PowerAgentWorkload(Workload):
    def __init__(self, directory: DeviceDirectory, faults: Faults, generation: str = "PA-9790",
                 interval_s: float = RECONCILE_INTERVAL_S, *, auth: Any) -> None:
        self.directory = directory
        self.auth = auth  # the API server's authenticator and RBAC: the agent lists pods with its pod's rights
        self.interval_s = interval_s
        self.faults = faults
        self.default_generation = generation
        self.agent: PowerAgent | None = None
        self.cli: AgentCli | None = None
        self._timer: Any = None
        self._devices: NodeDevices | None = None

    def start(self, ctx: WorkloadContext) -> None:
        def log(level: str, message: str) -> None:
            ctx.log(f"{level} power_agent: {message}")

        devices = self.directory.get(ctx.node.name)
        argv = list(ctx.container.get("command") or []) + list(ctx.container.get("args") or [])
        annotations = ctx.pod["metadata"].get("annotations") or {}
        generation = annotations.get(GENERATION_ANNOTATION, self.default_generation)
        try:
            if devices is None:
                raise CliError(f"no GPUs on node {ctx.node.name}")
            if generation not in GENERATIONS:
                raise CliError(f"unknown agent generation {generation!r} (one of {', '.join(GENERATIONS)})")
            self.cli = parse(argv, container_env(ctx))
        except CliError as exc:
            log("ERROR", f"power_agent.py: error: {exc}")
            ctx.clock.call_later(0, lambda: ctx.exit(2))
            return
        self._devices = devices
        state_path = host_path_for(ctx.pod, ctx.container, f"{STATE_DIR}/{STATE_FILE}")
        try:
            self.agent = build_agent(
                self.cli, devices, generation, self._pod_lister(ctx), ctx.host.cgroup, log, self.faults,
                visible=ctx.gpus or None, privileged=is_privileged(ctx.container), state_path=state_path,
                store=ctx.store, namespace=ctx.namespace,
            )
        except DcgmError as exc:  # no fallback to NVML: the container dies and is restarted
            log("ERROR", f"DCGM actuator init failed: {exc}")
            ctx.clock.call_later(0, lambda: ctx.exit(1))
            return
        self._timer = ctx.clock.every(self.interval_s, self._tick, first_delay=0)

    def _tick(self) -> None:
        if self.agent is not None:
            if self.agent.ticks == 0:
                self.agent.start()
            self.agent.reconcile_once()

    def _pod_lister(self, ctx: WorkloadContext):
        cli = self.cli
        assert cli is not None

        def list_pods() -> list[dict]:
            # In process, but as its pod: the service-account token the kubelet would mount,
            # authenticated and authorised by the API server's own RBAC, then the list.
            try:
                user = self.auth.authenticate("Bearer " + self.auth.token_for_pod(ctx.pod))
                self.auth.check(user, Request("list", "", "pods", namespace=cli.namespace))
                # the agent only reads the pods (as it would a list's JSON): no copy of each
                return ctx.store.list("pods", cli.namespace, field_selector=f"spec.nodeName={ctx.node.name}", copy=False)
            except ApiError as exc:  # as the client reports it: the agent logs and skips the cycle
                raise PodListError(f"({exc.code}) {exc.message}") from exc

        return list_pods

    def stop(self, ctx: WorkloadContext, graceful: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if graceful and self.agent is not None:
            self.agent.handle_sigterm()
        self.agent = None

    def exec(self, ctx: WorkloadContext, argv: list[str], stdin: bytes | None) -> ExecResult:
        if self._oom_on_probe(ctx, argv):
            ctx.log("ERROR power_agent: container OOM-killed by an exec probe (memory limit < 256Mi)")
            ctx.clock.call_later(0, lambda: ctx.exit(137))
            return ExecResult(stderr=b"command terminated with exit code 137\n", exit_code=137)
        devices = self._devices or self.directory.get(ctx.node.name)
        probe = ProbeContext(
            env=container_env(ctx),
            nvml=(lambda: devices.nvml(ctx.gpus or None, is_privileged(ctx.container)).as_module()) if devices else None,
            http_get=lambda port, path: self.http_get(ctx, port, path),
            fallback=ctx,
            mangle_json=lambda: self.faults.exec_preload_mangles_json,
        )
        return run_probe(argv, stdin, probe)

    def _oom_on_probe(self, ctx: WorkloadContext, argv: list[str]) -> bool:
        limit = memory_limit_bytes(ctx.container)
        is_python = bool(argv) and argv[0].rsplit("/", 1)[-1].startswith("python")
        return self.faults.exec_oom_kills_agent and is_python and limit is not None and limit < OOM_THRESHOLD_BYTES

    def http_get(self, ctx: WorkloadContext, port: int, path: str) -> HttpResponse | None:
        if self.agent is None or self.cli is None or not self.cli.prometheus_port or port != self.cli.prometheus_port:
            return None  # connection refused
        if path.split("?")[0] in ("/metrics", "/"):
            return 200, CONTENT_TYPE, self.agent.metrics.render()
        return 404, "text/plain", b"Not Found\n"
