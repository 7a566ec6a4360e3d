"""A container mapped to a local program runs as a real child process: env and command line by the
kubelet's rules, stdout/stderr as its log, exit status and restarts as on a real node."""

from __future__ import annotations

import json
import re
import time

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from process_rig import TINY, eventually, pid_alive, tiny_pod

from stepgraph.twin import NodeConfig, Twin
from stepgraph.twin.kubelet import CONFIG_RETRY
from stepgraph.twin.process.runtime import ContainerMatch, Program


def logs(core, name, **kw) -> str:
    return core.read_namespaced_pod_log(name, "default", **kw)


def status(core, name):
    return core.read_namespaced_pod(name, "default").status.container_statuses[0]


def test_env_and_command_line_follow_the_kubelet_rules(twin, core, tiny):
    env = {"SHOW": "GREETING,NODE,POD,NS,IP,LITERAL", "GREETING": "hello $(NODE)", "LITERAL": "$$(NODE)"}
    fields = [{"name": n, "valueFrom": {"fieldRef": {"fieldPath": p}}} for n, p in
              (("NODE", "spec.nodeName"), ("POD", "metadata.name"), ("NS", "metadata.namespace"), ("IP", "status.podIP"))]
    # GREETING names NODE before NODE is defined: it stays as written, as on a real kubelet
    core.create_namespaced_pod("default", tiny_pod("envs", env=env, extra_env=fields,
                                                    args=["--node=$(NODE)", "--ns=$(NS)", "$$(NODE)", "$(UNSET)", "$(NODE"]))
    # Both streams reach the log; they are read apart, so the stderr line may land after "ready".
    text = eventually(lambda: "ready" in (t := logs(core, "envs")) and "a line on stderr\n" in t and t,
                      what="the program's start, on stdout and stderr")
    pod_ip = core.read_namespaced_pod("envs", "default").status.pod_ip
    assert "argv --node=twin-gpu-node --ns=default $(NODE) $(UNSET) $(NODE\n" in text
    assert f"env IP={pod_ip}\n" in text and "env POD=envs\n" in text and "env NS=default\n" in text
    assert "env GREETING=hello $(NODE)\n" in text and "env LITERAL=$(NODE)\n" in text


def test_log_options_timestamps_tail_and_since(twin, core, tiny):
    core.create_namespaced_pod("default", tiny_pod("talk"))
    # stdout and stderr are read apart, so which of their last lines the log holds last is a race
    # (as on a real node): wait for both, then compare against the whole log.
    text = eventually(lambda: "ready" in (t := logs(core, "talk")) and "a line on stderr" in t and t)
    assert logs(core, "talk", tail_lines=1) == text.splitlines(keepends=True)[-1]
    stamped = logs(core, "talk", timestamps=True).splitlines()
    assert all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z ", line) for line in stamped), stamped
    assert logs(core, "talk", since_seconds=3600) == text


def test_exit_code_ends_the_container_and_the_pod(twin, core, tiny):
    core.create_namespaced_pod("default", tiny_pod("job", env={"MODE": "exit", "CODE": "3"}))
    pod = eventually(lambda: (p := core.read_namespaced_pod("job", "default")).status.phase == "Failed" and p)
    terminated = pod.status.container_statuses[0].state.terminated
    assert terminated.exit_code == 3 and terminated.reason == "Error"
    core.create_namespaced_pod("default", tiny_pod("ok", env={"MODE": "exit", "CODE": "0"}))
    eventually(lambda: core.read_namespaced_pod("ok", "default").status.phase == "Succeeded")


def test_a_program_that_crashes_at_start_goes_into_crash_loop_back_off(twin, core, tiny):
    core.create_namespaced_pod("default", tiny_pod("crashy", env={"MODE": "crash"}, restart="Always"))
    # the first restart is at once; the second crash waits out the back-off
    s = eventually(lambda: (s := status(core, "crashy")).state.waiting and s.state.waiting.reason == "CrashLoopBackOff"
                   and s, what="CrashLoopBackOff")
    assert s.restart_count == 1 and s.last_state.terminated.exit_code == 1
    assert "RuntimeError: boom at start" in logs(core, "crashy")
    previous = logs(core, "crashy", previous=True)
    assert "Traceback (most recent call last):" in previous and "RuntimeError: boom at start" in previous
    assert core.read_namespaced_pod("crashy", "default").status.phase == "Running"


def test_previous_logs_need_a_previous_instance(twin, core, tiny):
    core.create_namespaced_pod("default", tiny_pod("fresh"))
    eventually(lambda: "ready" in logs(core, "fresh"))
    with pytest.raises(ApiException) as err:
        logs(core, "fresh", previous=True)
    assert err.value.status == 400
    assert json.loads(err.value.body)["message"] == 'previous terminated container "main" in pod "fresh" not found'


def test_a_command_that_does_not_exist_is_a_start_error(twin, core, tiny):
    body = tiny_pod("nocmd")
    body["spec"]["containers"][0]["command"] = ["/app/no-such-program"]
    core.create_namespaced_pod("default", body)
    terminated = eventually(lambda: status(core, "nocmd").state.terminated)
    assert terminated.exit_code == 128 and terminated.reason == "StartError"
    assert 'exec: "' in terminated.message and "no such file or directory" in terminated.message


def test_a_missing_config_map_keeps_the_container_waiting(twin, core, tiny):
    ref = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k"}}}]
    core.create_namespaced_pod("default", tiny_pod("cfg", extra_env=ref))
    waiting = eventually(lambda: status(core, "cfg").state.waiting and status(core, "cfg").state.waiting.reason
                         == "CreateContainerConfigError" and status(core, "cfg").state.waiting)
    assert waiting.message == 'configmap "absent" not found'


def test_a_container_waiting_on_its_config_never_shows_as_created_started_or_running():
    """A real kubelet builds a container's environment before it creates the container: a missing
    config map is `CreateContainerConfigError` on a Pending pod, at the first try and at every
    retry, with no `Created` event and never a moment in which the container looks started."""
    with Twin(clock="virtual", node=NodeConfig(startup_delay=0.0)) as twin:
        twin.processes.register(twin.workloads, "tiny", ContainerMatch(image="tiny"),
                                Program(root=TINY.parent, mount="/app", entrypoint=("python3", "/app/tiny_program.py")))
        api = twin.api_client()
        try:
            core = client.CoreV1Api(api)
            since = core.list_namespaced_pod("default").metadata.resource_version
            ref = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k"}}}]
            core.create_namespaced_pod("default", tiny_pod("cfg", extra_env=ref))
            for _ in range(3):  # the first start and two retries
                twin.clock.advance(CONFIG_RETRY)
            seen = [event["object"].status for event in
                    watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=since, timeout_seconds=1)]
            reasons = sorted({e.reason for e in core.list_namespaced_event("default").items})
        finally:
            api.close()
    states = [(s.phase, c.state.waiting.reason if c.state.waiting else c.state.to_dict(), c.started)
              for s in seen for c in s.container_statuses or []]
    assert states[-1] == ("Pending", "CreateContainerConfigError", False)
    assert {state for state in states} == {("Pending", "ContainerCreating", False),
                                           ("Pending", "CreateContainerConfigError", False)}
    assert reasons == ["Failed", "Pulled", "Scheduled"]


def test_a_command_line_that_would_skip_the_view_keeps_the_container_waiting_and_leaves_no_folder(twin, core, tiny):
    body = tiny_pod("isolated")
    body["spec"]["containers"][0]["command"] = ["python3", "-I", "/app/tiny_program.py"]
    core.create_namespaced_pod("default", body)
    def refused():
        state = status(core, "isolated").state
        return state.waiting if state.waiting and state.waiting.reason == "CreateContainerConfigError" else None
    waiting = eventually(refused)
    assert "'-I' makes Python skip the twin's start-up hook" in waiting.message
    assert list((twin.processes.node_view().folder / "c").iterdir()) == []  # the refused start's view is gone


def test_stopping_the_twin_leaves_no_process_behind(twin, core, tiny):
    core.create_namespaced_pod("default", tiny_pod("forks", env={"MODE": "fork"}))
    text = eventually(lambda: "ready" in (t := logs(core, "forks")) and t)
    pids = [int(re.search(rf"^{what} (\d+)$", text, re.M).group(1)) for what in ("pid", "child")]
    assert all(pid_alive(p) for p in pids)
    twin.stop()
    # the program is reaped by then; its own child is signalled with it and gone a moment later
    eventually(lambda: not [p for p in pids if pid_alive(p)], timeout=5, what="every process's end")


def test_death_by_signal_is_exit_code_128_plus_the_signal(twin, core, tiny):
    core.create_namespaced_pod("default", tiny_pod("killed", env={"MODE": "signal"}))
    terminated = eventually(lambda: status(core, "killed").state.terminated)
    assert terminated.exit_code == 137 and terminated.reason == "Error"


def pid_of(core, name) -> int:
    text = eventually(lambda: "ready" in (t := logs(core, name)) and t, what=f"{name} ready")
    return int(re.search(r"^pid (\d+)$", text, re.M).group(1))


def gone(core, name) -> bool:
    try:
        core.read_namespaced_pod(name, "default")
    except ApiException as exc:
        return exc.status == 404
    return False


def test_deletion_sends_sigterm_and_the_pod_goes_once_the_program_has_exited(twin, core, tiny):
    core.create_namespaced_pod("default", tiny_pod("term", env={"MODE": "slow", "STOP_SECONDS": "1"}))
    pid = pid_of(core, "term")
    start = time.monotonic()
    core.delete_namespaced_pod("term", "default")  # the default grace period: 30 s
    assert core.read_namespaced_pod("term", "default").metadata.deletion_timestamp is not None
    eventually(lambda: "got SIGTERM" in logs(core, "term"), what="SIGTERM reaching the program")
    eventually(lambda: gone(core, "term"), what="the pod's removal")
    assert 0.9 < time.monotonic() - start < 10  # when the program ended, long before the grace period
    assert not pid_alive(pid)


def test_a_program_that_ignores_sigterm_is_killed_when_the_grace_period_ends(twin, core, tiny):
    core.create_namespaced_pod("default", tiny_pod("stubborn", env={"MODE": "hang"}, terminationGracePeriodSeconds=2))
    pid = pid_of(core, "stubborn")
    start = time.monotonic()
    core.delete_namespaced_pod("stubborn", "default")
    eventually(lambda: not pid_alive(pid), what="SIGKILL after the grace period")
    assert time.monotonic() - start > 1.9
    eventually(lambda: gone(core, "stubborn"), what="the pod's removal")
