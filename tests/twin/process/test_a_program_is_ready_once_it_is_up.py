"""On the scaled clock a program's start-up lasts `rate` times its wall time, so its container is
Running but not Ready until the program is up (its first wait, or its first call to the API
server, NVML, DCGM or the cgroup view); on real time it is Ready at start, as on a node."""

from __future__ import annotations

import pytest
from kubernetes import client
from process_rig import TINY, eventually, tiny_pod

from stepgraph.twin import NodeConfig, Twin
from stepgraph.twin.process.runtime import ContainerMatch, Program


def ready(core, name: str) -> bool:
    conditions = core.read_namespaced_pod(name, "default").status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def logs(core, name: str) -> str:
    try:
        return core.read_namespaced_pod_log(name, "default")
    except client.exceptions.ApiException:
        return ""


@pytest.fixture
def scaled_core():
    with Twin(clock="scaled:25", node=NodeConfig(startup_delay=0.0)) as twin:
        program = Program(root=TINY.parent, mount="/app", entrypoint=("python3", "/app/tiny_program.py"))
        twin.processes.register(twin.workloads, "tiny", ContainerMatch(image="tiny"), program)
        api = twin.api_client()
        try:
            yield client.CoreV1Api(api)
        finally:
            api.close()


def test_on_the_scaled_clock_a_starting_program_is_running_but_not_ready(scaled_core):
    scaled_core.create_namespaced_pod("default", tiny_pod("slow-start", env={"START_SECONDS": "2"}))
    eventually(lambda: "argv" in logs(scaled_core, "slow-start"), what="the program's first line")
    # The kubelet reports Running once the process it started is under way, so a busy machine can
    # show the program's first line before that status (a node's kubelet can, too).
    eventually(lambda: scaled_core.read_namespaced_pod("slow-start", "default").status.phase == "Running",
               what="the pod Running")
    assert not ready(scaled_core, "slow-start")  # 2 wall seconds in select(): 50 twin seconds of start-up
    eventually(lambda: "ready" in logs(scaled_core, "slow-start"), what="the program's last line before it waits")
    # at its wait, not at the start-up timer (300 twin s = 12 wall s after the start)
    eventually(lambda: ready(scaled_core, "slow-start"), timeout=6, what="Ready once the program waits")


def test_on_real_time_a_program_is_ready_at_start(twin, core, tiny):
    core.create_namespaced_pod("default", tiny_pod("real-start", env={"START_SECONDS": "2"}))
    eventually(lambda: "argv" in logs(core, "real-start"), what="the program's first line")
    assert ready(core, "real-start") and "ready" not in logs(core, "real-start")
