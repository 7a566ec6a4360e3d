"""The reference Power Agent as a program: what `python /app/power_agent.py …` runs in a process
container, so the twin's own agent is tested the way a real agent is run.

It meets the node only through what the real agents use: the real `pynvml` (the twin's
`libnvidia-ml.so.1`), the official `kubernetes` client with in-cluster config (kubeconfig as
the fallback, as every agent version does), `/proc/<pid>/cgroup`, the state file under
`/var/lib/dynamo-power-agent/`, `prometheus_client.start_http_server` on `--prometheus-port`, a
15 s tick on `Event.wait` and SIGTERM/SIGINT → restore. The policy, metrics and state rules are
the in-process agent's (`agent.py`, `policy.py`, `metrics.py`, `state.py`), so both modes decide
alike. The image's generation is `$TWIN_AGENT_GENERATION` (the in-process default otherwise).
With `--actuator=dcgm` the in-process DCGM actuator runs over the DCGM Python bindings (`pydcgm`,
`dcgm_structs`, `dcgmvalue`, as the real agents import them) against `--dcgm-host:--dcgm-port`;
no hostengine there → exit 1, no fallback to NVML, as the real agents do.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import Any

# At the top, as every real agent version imports it: the program's start-up is over once its
# imports are (the twin's kubelet marks it Ready at its first call, NVML's init among them).
from kubernetes import client, config

from stepgraph.twin.dcgm import (
    DCGM_FI_DEV_POWER_MGMT_LIMIT,
    DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF,
    DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX,
    DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN,
    DcgmError,
)
from stepgraph.twin.power_agent.actuators import DcgmActuator, NvmlActuator
from stepgraph.twin.power_agent.agent import RECONCILE_INTERVAL_S, AgentConfig, PodListError, PowerAgent
from stepgraph.twin.power_agent.cli import GENERATION_ENV, CliError, parse
from stepgraph.twin.power_agent.metrics import AgentMetrics
from stepgraph.twin.power_agent.policy import GENERATIONS
from stepgraph.twin.power_agent.state import STATE_DIR, STATE_FILE, ManagedState


def log(level: str, message: str) -> None:
    print(f"{level} power_agent: {message}", file=sys.stderr, flush=True)


class ContainerFiles:
    """The agent's own filesystem (a hostPath mount or the container's layer): text by path."""

    def read(self, path: str) -> str | None:
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def write(self, path: str, text: str) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)


def pod_lister(namespace: str | None, node_name: str):
    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    api = client.CoreV1Api()
    selector = f"spec.nodeName={node_name}" if node_name else None

    def list_pods() -> list[dict]:
        try:
            if namespace:
                resp = api.list_namespaced_pod(namespace, field_selector=selector, _preload_content=False)
            else:
                resp = api.list_pod_for_all_namespaces(field_selector=selector, _preload_content=False)
            return json.loads(resp.data)["items"]
        except (client.ApiException, OSError, ValueError) as exc:
            raise PodListError(str(exc)) from exc
    return list_pods


class PydcgmConnection:
    """The DCGM actuator's connection, spoken through the DCGM Python bindings as a real agent does."""

    def __init__(self, host: str, port: int) -> None:
        import dcgm_structs
        import pydcgm
        self._structs, self._pydcgm = dcgm_structs, pydcgm
        self.handle = self._call(lambda: pydcgm.DcgmHandle(ipAddress=f"{host}:{port}",
                                                            opMode=dcgm_structs.DCGM_OPERATION_MODE_AUTO,
                                                            persistAfterDisconnect=False, timeoutMs=5000))
        self._groups: dict[int, Any] = {}  # pydcgm's DcgmGroup objects

    def _call(self, fn):
        try:
            return fn()
        except self._structs.DCGMError as exc:  # the actuator speaks the twin's DcgmError (same codes)
            raise DcgmError(exc.value, str(exc)) from exc

    def get_all_gpu_ids(self) -> list[int]:
        return list(self._call(lambda: self.handle.GetSystem().discovery.GetAllGpuIds()))

    def _attributes(self, gpu: int):
        return self._call(lambda: self.handle.GetSystem().discovery.GetGpuAttributes(gpu))

    def gpu_uuid(self, gpu: int) -> str:
        uuid = self._attributes(gpu).identifiers.uuid
        return uuid.decode() if isinstance(uuid, bytes) else uuid

    def latest_values(self, gpu: int, field_ids: list[int]) -> dict[int, float]:
        limits = self._attributes(gpu).powerLimits
        by_field = {DCGM_FI_DEV_POWER_MGMT_LIMIT: limits.curPowerLimit, DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF:
                    limits.defaultPowerLimit, DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN: limits.minPowerLimit,
                    DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX: limits.maxPowerLimit}
        return {f: float(by_field[f]) for f in field_ids}

    def create_group(self, name: str) -> int:
        group = self._call(lambda: self._pydcgm.DcgmGroup(self.handle, groupName=name,
                                                          groupType=self._structs.DCGM_GROUP_EMPTY))
        gid = int(group.GetId().value if hasattr(group.GetId(), "value") else group.GetId())
        self._groups[gid] = group
        return gid

    def add_gpu(self, gid: int, gpu: int) -> None:
        self._call(lambda: self._groups[gid].AddGpu(gpu))

    def config_set_power_limit(self, gid: int, watts: int) -> None:
        import dcgmvalue
        structs = self._structs
        cfg = structs.c_dcgmDeviceConfig_v2()
        cfg.version = structs.dcgmDeviceConfig_version2
        cfg.mEccMode = cfg.mComputeMode = dcgmvalue.DCGM_INT32_BLANK
        cfg.mPerfState.syncBoost = dcgmvalue.DCGM_INT32_BLANK
        cfg.mPerfState.targetClocks.memClock = cfg.mPerfState.targetClocks.smClock = dcgmvalue.DCGM_INT32_BLANK
        for i in range(structs.DCGM_WORKLOAD_POWER_PROFILE_ARRAY_SIZE):
            cfg.mWorkloadPowerProfiles[i] = dcgmvalue.DCGM_INT32_BLANK
        cfg.mPowerLimit.type = structs.DCGM_CONFIG_POWER_CAP_INDIVIDUAL
        cfg.mPowerLimit.val = int(watts)
        self._call(lambda: self._groups[gid].config.Set(cfg))

    def config_enforce(self, gid: int) -> None:
        self._call(lambda: self._groups[gid].config.Enforce())

    def close(self) -> None:
        for group in self._groups.values():
            try:
                group.Delete()
            except self._structs.DCGMError:
                pass  # the hostengine already forgot it (restart): nothing left to delete
        self._groups.clear()
        self.handle.Shutdown()


def read_cgroup(pid: int) -> str:
    with open(f"/proc/{pid}/cgroup", encoding="utf-8") as f:
        return f.read()


def main(argv: list[str]) -> int:
    try:
        cli = parse(["power_agent.py", *argv], dict(os.environ))
    except CliError as exc:
        print(f"usage: power_agent.py [options]\npower_agent.py: error: {exc}", file=sys.stderr, flush=True)
        return 2
    generation = os.environ.get(GENERATION_ENV, "PA-9790")
    if generation not in GENERATIONS:
        log("ERROR", f"unknown {GENERATION_ENV} {generation!r} (one of {', '.join(GENERATIONS)})")
        return 2
    import pynvml
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    metrics = AgentMetrics(with_enforce_counter=generation != "PA-late")
    state = ManagedState(ContainerFiles(), f"{STATE_DIR}/{STATE_FILE}")  # type: ignore[arg-type]
    actuator: NvmlActuator | DcgmActuator
    if cli.actuator == "dcgm":
        try:
            actuator = DcgmActuator(lambda: PydcgmConnection(cli.dcgm_host, cli.dcgm_port), cli.dcgm_enforce,
                                    pynvml, metrics, state, log)
        except DcgmError as exc:  # no fallback to NVML: the container dies and is restarted
            log("ERROR", f"DCGM actuator init failed: {exc}")
            return 1
    else:
        actuator = NvmlActuator(pynvml, metrics, state, log)
    node = cli.node_name or ""
    config = AgentConfig(cli.safe_default_watts, node, cli.namespace, generation, cli.actuator)
    agent = PowerAgent(config, actuator, metrics, state, pod_lister(cli.namespace, node), read_cgroup, log)
    if cli.prometheus_port > 0:
        from prometheus_client import start_http_server
        start_http_server(cli.prometheus_port, registry=metrics.registry)
    log("INFO", f"started: node {node}, generation {generation}, safe default {cli.safe_default_watts} W")
    agent.start()
    while not stop.is_set():
        agent.reconcile_once()
        stop.wait(RECONCILE_INTERVAL_S)
    agent.handle_sigterm()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
