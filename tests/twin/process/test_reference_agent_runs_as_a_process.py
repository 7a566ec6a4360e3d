"""The twin's own Power Agent run the way a real agent is run: `agent: {program: reference}` makes
the agent DaemonSet's container a real process (real pynvml on the twin's library, in-cluster
config over HTTPS, /proc/<pid>/cgroup, prometheus_client on its port, the DCGM bindings over the
hostengine Service with `--actuator=dcgm`), on the scaled clock."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.stream import stream
from process_rig import eventually

from stepgraph.twin.world import agent_program_dir, load_world, profile
from stepgraph.twin.world_install import build_twin

METRICS_PROBE = (Path(__file__).resolve().parents[3] / "steps" / "probes" / "metrics.py").read_text()
ANNOTATION = "dynamo.nvidia.com/gpu-power-limit"
COMPONENT = "app.kubernetes.io/component=power-agent"


@pytest.fixture(params=["path-b", "path-b-dcgm"])
def agent_world(request):
    world = load_world(profile(request.param))
    world.agent.program = str(agent_program_dir("reference"))
    twin = build_twin(world).start()
    api = twin.api_client()
    try:
        yield twin, world, client.CoreV1Api(api), client.AppsV1Api(api)
    finally:
        api.close()
        twin.stop()


def worker(name: str, watts: int) -> dict:
    return {"metadata": {"name": name, "annotations": {ANNOTATION: str(watts), "twin.stepgraph.dev/cuda-context": "true"}},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "infinity"],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def test_the_reference_agent_as_a_process_caps_reports_and_restores(agent_world):
    twin, world, core, apps = agent_world
    board = twin.gpu.devices.board
    agent = eventually(lambda: core.list_namespaced_pod(world.namespace, label_selector=COMPONENT).items,
                       what="the agent pod")[0].metadata.name
    # (with DCGM it may crash once or twice until the hostengine answers, as on a node)
    eventually(lambda: "startup:" in core.read_namespaced_pod_log(agent, world.namespace), what="the agent's start")
    assert twin.processes.children(), "the agent container is a real child process"
    core.create_namespaced_pod("default", worker("w", 250))
    eventually(lambda: sorted(g.limit_w for g in board.gpus).count(250) == 1, what="the cap on the worker's GPU")
    metrics = stream(core.connect_get_namespaced_pod_exec, agent, world.namespace, command=["python", "-c", METRICS_PROBE],
                     stdout=True, stderr=True, stdin=False, tty=False)
    # one GPU at 250 W (labelled by the actuator's own index: NVML's, or DCGM's gpuId order)
    assert len(re.findall(r'^dynamo_power_agent_applied_limit_watts\{gpu="\d+"\} 250\.0$', metrics, re.M)) == 1
    log = core.read_namespaced_pod_log(agent, world.namespace)
    assert "startup: 0 previously managed GPU(s), 0 orphan(s) restored" in log
    assert f"--actuator={world.agent.actuator}" in " ".join(core.read_namespaced_pod(agent, world.namespace).spec.containers[0].command)
    apps.delete_namespaced_daemon_set("power-agent", world.namespace)  # its pod goes: SIGTERM → restore
    eventually(lambda: all(g.limit_mw == g.default_mw for g in board.gpus), what="every GPU back at its default")
    eventually(lambda: not twin.processes.children(), what="the agent process's end")
