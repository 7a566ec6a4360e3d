"""Exec over the websocket channel protocol (`kubernetes.stream.stream`), logs, and the pod proxy."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

from stepgraph.twin import NodeConfig
from stepgraph.twin.workloads import ExecResult, Workload


class Probe(Workload):
    """Answers `probe` with fixed stdout/stderr/exit code; `upper` echoes stdin upper-cased."""

    def exec(self, ctx, argv, stdin):
        if argv[0] == "probe":
            return ExecResult(b'{"gpus": %d}\n' % len(ctx.gpus), b"warning: probe\n", int(argv[1]) if len(argv) > 1 else 0)
        if argv[0] == "upper":
            return ExecResult((stdin or b"").upper())
        if argv[0] == "big":
            return ExecResult(b"x" * 200_000)
        return super().exec(ctx, argv, stdin)

    def http_get(self, ctx, port, path):
        if port == 9100 and path == "/metrics":
            return 200, "text/plain; version=0.0.4", b"agent_up 1\n"
        return None


@pytest.fixture
def running(twin, core, make_pod):
    twin.workloads.register("probe", lambda pod, c: c["image"].startswith("probe"), lambda pod, c: Probe())
    body = make_pod("p", gpus=2)
    body["spec"]["containers"][0]["image"] = "probe:1"
    body["spec"]["containers"][0]["ports"] = [{"containerPort": 9100, "name": "metrics"}]
    core.create_namespaced_pod("default", body)
    twin.clock.sleep(3)
    return core


def run(core, command, **kw):
    return stream(core.connect_get_namespaced_pod_exec, "p", "default", command=command,
                  stderr=True, stdin=False, stdout=True, tty=False, **kw)


def test_exec_preloaded_returns_stdout_and_stderr(running):
    out = run(running, ["probe"])
    assert '{"gpus": 2}' in out and "warning: probe" in out


def test_exec_streaming_separates_channels_and_reports_exit_code(running):
    ws = run(running, ["probe", "3"], _preload_content=False)
    ws.run_forever(timeout=10)
    assert json.loads(ws.read_stdout()) == {"gpus": 2}
    assert ws.read_stderr() == "warning: probe\n"
    assert ws.returncode == 3


def test_exec_stdin_over_v5_channel_close(running):
    ws = stream(running.connect_get_namespaced_pod_exec, "p", "default", command=["upper"], stdin=True,
                stdout=True, stderr=True, tty=False, _preload_content=False)
    ws.write_stdin("hello twin")
    ws.close_channel(0)
    ws.run_forever(timeout=10)
    assert ws.read_stdout() == "HELLO TWIN" and ws.returncode == 0


def test_exec_over_v4_protocol(running):
    ws = stream(running.connect_get_namespaced_pod_exec, "p", "default", command=["probe", "1"], stdin=False,
                stdout=True, stderr=True, tty=False, _preload_content=False,
                _headers={"sec-websocket-protocol": "v4.channel.k8s.io"})
    ws.run_forever(timeout=10)
    assert ws.subprotocol == "v4.channel.k8s.io"
    assert ws.read_stdout().strip() == '{"gpus": 2}' and ws.returncode == 1


def test_large_output_arrives_whole_across_frames(running):
    ws = run(running, ["big"], _preload_content=False)
    ws.run_forever(timeout=10)
    assert len(ws.read_stdout()) == 200_000


def test_unknown_command_is_127_with_the_runtime_message(running):
    ws = run(running, ["nvidia-smi"], _preload_content=False)
    ws.run_forever(timeout=10)
    assert ws.returncode == 127
    assert ws.read_stderr() == 'exec: "nvidia-smi": executable file not found in $PATH\n'


@pytest.fixture
def plain(twin, core, make_pod):
    """A running pod with the default workload: exec gets the built-in shell."""
    core.create_namespaced_pod("default", make_pod("plain"))
    twin.clock.sleep(3)
    return core


def shell_exec(core, script):
    ws = stream(core.connect_get_namespaced_pod_exec, "plain", "default", command=["/bin/sh", "-c", script],
                stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
    ws.run_forever(timeout=10)
    return ws.returncode, ws.read_stdout(), ws.read_stderr()


@pytest.mark.parametrize(("script", "expected"), [
    ("sleep 1; exit 3", (3, "", "")),
    ("echo a; false; exit", (1, "a\n", "")),
    ("false && echo no || echo yes", (0, "yes\n", "")),
    ("echo one\necho two", (0, "one\ntwo\n", "")),
    ("ls /", (0, "etc\nproc\n", "")),
    ("exit 300", (44, "", "")),
])
def test_the_built_in_shell_runs_command_lists_and_exit(plain, script, expected):
    assert shell_exec(plain, script) == expected


@pytest.mark.parametrize("script", ["echo a | gzip", "while true; do date; done", "echo $HOME", "echo x > f"])
def test_the_built_in_shell_refuses_what_it_cannot_run_as_sh_would(plain, script):
    code, out, err = shell_exec(plain, script)
    assert (code, out) == (2, "") and "not supported by the twin's built-in shell" in err


def test_exec_into_a_pod_that_is_not_running_fails(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("waiting"))
    with pytest.raises(ApiException):  # the websocket handshake is refused with a 400 Status
        stream(core.connect_get_namespaced_pod_exec, "waiting", "default", command=["true"],
               stderr=True, stdin=False, stdout=True, tty=False)


def test_exec_into_a_missing_pod_fails(core):
    with pytest.raises(ApiException):
        stream(core.connect_get_namespaced_pod_exec, "nope", "default", command=["true"],
               stderr=True, stdin=False, stdout=True, tty=False)


def test_logs_need_a_container_name_when_there_are_several(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("two", containers=[{"name": "a", "image": "i:1"},
                                                                      {"name": "b", "image": "i:1"}]))
    twin.clock.sleep(3)
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("two", "default")
    assert err.value.status == 400 and "choose one of: [a b]" in json.loads(err.value.body)["message"]
    assert core.read_namespaced_pod_log("two", "default", container="a") == ""


def test_logs_of_a_pod_still_starting_are_400(core, make_pod):
    core.create_namespaced_pod("default", make_pod("starting"))
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("starting", "default")
    assert err.value.status == 400 and "is waiting to start: ContainerCreating" in json.loads(err.value.body)["message"]


def test_pod_proxy_reaches_the_workload_http_endpoint(running):
    body = running.connect_get_namespaced_pod_proxy_with_path("p:9100", "default", "metrics")
    assert body == "agent_up 1\n"
    with pytest.raises(ApiException) as err:
        running.connect_get_namespaced_pod_proxy_with_path("p:9100", "default", "nothing-here")
    assert err.value.status == 503


@pytest.mark.twin(nodes=[NodeConfig(name="gpu-a"), NodeConfig(name="gpu-b", labels={"role": "second"})])
@pytest.mark.parametrize("previous", [False, True])
def test_logs_on_a_multi_node_twin_take_the_same_options(twin, core, make_pod, previous):
    # The pod's kubelet answers; --previous of a first instance is the kubelet's 400, as on one node.
    core.create_namespaced_pod("default", make_pod("p", node_selector={"role": "second"}))
    twin.clock.sleep(3)
    assert core.read_namespaced_pod("p", "default").spec.node_name == "gpu-b"
    if not previous:
        assert core.read_namespaced_pod_log("p", "default") == ""
        return
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("p", "default", previous=True)
    assert err.value.status == 400
    assert json.loads(err.value.body)["message"] == 'previous terminated container "main" in pod "p" not found'
