"""Kubelet on the virtual clock: Pending → Running/Ready after the start-up delay; exits; restarts."""

from __future__ import annotations

import threading

import pytest

from stepgraph.twin import NodeConfig
from stepgraph.twin.workloads import Workload


def ready(pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


@pytest.mark.twin(node=NodeConfig(startup_delay=4.0))
def test_pod_starts_only_when_virtual_time_passes_the_startup_delay(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("p"))
    pod = core.read_namespaced_pod("p", "default")
    assert pod.spec.node_name == twin.node.name and pod.status.phase == "Pending"
    assert pod.status.container_statuses[0].state.waiting.reason == "ContainerCreating"
    twin.clock.sleep(3.9)
    assert core.read_namespaced_pod("p", "default").status.phase == "Pending"
    twin.clock.sleep(0.1)
    pod = core.read_namespaced_pod("p", "default")
    assert pod.status.phase == "Running" and ready(pod)
    assert pod.status.container_statuses[0].state.running is not None
    assert pod.status.pod_ip and pod.status.qos_class == "BestEffort"


@pytest.mark.parametrize("code,phase,reason", [("0", "Succeeded", "Completed"), ("3", "Failed", "Error")])
def test_a_workload_that_ends_moves_the_pod_to_a_terminal_phase(twin, core, make_pod, code, phase, reason):
    core.create_namespaced_pod("default", make_pod("job", annotations={
        "twin.stepgraph.dev/exit-after": "10", "twin.stepgraph.dev/exit-code": code}))
    twin.clock.sleep(5)
    assert core.read_namespaced_pod("job", "default").status.phase == "Running"
    twin.clock.sleep(10)
    pod = core.read_namespaced_pod("job", "default")
    assert pod.status.phase == phase and not ready(pod)
    terminated = pod.status.container_statuses[0].state.terminated
    assert terminated.exit_code == int(code) and terminated.reason == reason


def test_restart_policy_always_restarts_with_the_kubelets_back_off(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("svc", restart="Always", annotations={
        "twin.stepgraph.dev/exit-after": "1", "twin.stepgraph.dev/exit-code": "1"}))

    def status():
        return core.read_namespaced_pod("svc", "default").status.container_statuses[0]
    twin.clock.sleep(2 + 1)  # started at 2 s, exited at 3 s: the first restart happens at once
    assert status().restart_count == 1 and status().state.running is not None
    twin.clock.sleep(1)  # the second exit waits out a 10 s back-off
    s = status()
    assert s.state.waiting.reason == "CrashLoopBackOff" and s.restart_count == 1
    assert s.state.waiting.message.startswith("back-off 10s restarting failed container=main pod=svc_default(")
    assert s.last_state.terminated.exit_code == 1 and s.last_state.terminated.reason == "Error"
    twin.clock.sleep(9.9)
    assert status().state.waiting is not None
    twin.clock.sleep(0.1)
    assert status().state.running is not None and status().restart_count == 2
    twin.clock.sleep(1)  # and the next one twice as long
    assert status().state.waiting.message.startswith("back-off 20s ")
    twin.clock.sleep(20)
    assert status().state.running is not None and status().restart_count == 3
    assert core.read_namespaced_pod("svc", "default").status.phase == "Running"
    reasons = [e.reason for e in core.list_namespaced_event("default").items]
    assert "BackOff" in reasons


def test_workload_log_lines_are_served_by_the_log_subresource(twin, core, make_pod):
    class Chatty(Workload):
        def start(self, ctx):
            ctx.log("hello")
            ctx.clock.call_later(5, lambda: ctx.log("later"))
    twin.workloads.register("chatty", lambda pod, c: c["image"].startswith("chatty"), lambda pod, c: Chatty())
    body = make_pod("talk")
    body["spec"]["containers"][0]["image"] = "chatty:1"
    core.create_namespaced_pod("default", body)
    twin.clock.sleep(10)
    assert core.read_namespaced_pod_log("talk", "default") == "hello\nlater\n"
    assert core.read_namespaced_pod_log("talk", "default", tail_lines=1) == "later\n"
    assert core.read_namespaced_pod_log("talk", "default", since_seconds=6) == "later\n"


def test_follow_streams_new_lines_until_the_container_ends(twin, core, make_pod):
    class Ticker(Workload):
        def start(self, ctx):
            for i in range(3):
                ctx.clock.call_later(i + 1, lambda i=i: ctx.log(f"tick {i}"))
            ctx.clock.call_later(4, lambda: ctx.exit(0))
    twin.workloads.register("ticker", lambda pod, c: c["image"].startswith("ticker"), lambda pod, c: Ticker())
    body = make_pod("tick")
    body["spec"]["containers"][0]["image"] = "ticker:1"
    core.create_namespaced_pod("default", body)
    twin.clock.sleep(2.5)  # running, with one line logged so far
    resp = core.read_namespaced_pod_log("tick", "default", follow=True, _preload_content=False)
    stepper = threading.Timer(0.1, lambda: twin.clock.sleep(5))  # time moves while the client reads
    stepper.start()
    try:
        lines = [line.decode().strip() for line in resp.stream() for line in line.splitlines() if line]
    finally:
        stepper.join()
    assert lines == ["tick 0", "tick 1", "tick 2"]


def test_a_workload_decides_when_its_container_is_ready(twin, core, make_pod):
    class SlowModel(Workload):
        ready_on_start = False

        def start(self, ctx):
            ctx.clock.call_later(20, lambda: ctx.set_ready(True))
    twin.workloads.register("model", lambda pod, c: c["image"].startswith("model"), lambda pod, c: SlowModel())
    body = make_pod("m")
    body["spec"]["containers"][0]["image"] = "model:1"
    core.create_namespaced_pod("default", body)
    twin.clock.sleep(3)
    pod = core.read_namespaced_pod("m", "default")
    assert pod.status.phase == "Running" and not ready(pod) and not pod.status.container_statuses[0].ready
    twin.clock.sleep(20)
    assert ready(core.read_namespaced_pod("m", "default"))
