"""The reference Power Agent as a program: what `python /app/power_agent.py …` runs in a process
container, so the twin's own agent is tested the way a real agent is run.

It meets the node only through what the real agents use: the real `pynvml` (the twin's
`libnvidia-ml.so.1`), the official `kubernetes` client with in-cluster config (kubeconfig as
the fallback, as every agent version does), `/proc/<pid>/cgroup`, the state file under
`/var/lib/dynamo-power-agent/`, `prometheus_client.start_http_server` on `--prometheus-port`, a
15 s tick on `Event.wait` and SIGTERM/SIGINT → restore. The policy, metrics and state rules are
the in-process agent's (`agent.py`, `policy.py`, `metrics.py`, `state.py`), so both modes decide
alike. The image's generation is `$TWIN_AGENT_GENERATION` (the in-process default otherwise).
Only the NVML actuator runs here: `--actuator=dcgm` exits 1, as an agent without DCGM does.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

from stepgraph.twin.power_agent.actuators import NvmlActuator
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
    from kubernetes import client, config
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
    if cli.actuator != "nvml":
        log("ERROR", "DCGM actuator init failed: this build of the reference agent has the NVML actuator only")
        return 1
    import pynvml
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    metrics = AgentMetrics(with_enforce_counter=generation != "PA-late")
    state = ManagedState(ContainerFiles(), f"{STATE_DIR}/{STATE_FILE}")  # type: ignore[arg-type]
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
