"""Interactive exec with the official client: stdin reaches the command while it runs and its
output comes back as it is written — for the built-in shell of a container without a process and
for real commands in a process container (pipes, or a pseudo-terminal with `tty`, resized over
channel 4); a client that goes away takes its command with it."""

from __future__ import annotations

import json
import time

import pytest
from echo_ports import REAL_CLOCK_TWIN, serve_echo_ports, until
from kubernetes.stream import stream
from kubernetes.stream.ws_client import RESIZE_CHANNEL

pytestmark = REAL_CLOCK_TWIN


@pytest.fixture(autouse=True)
def echo_ports(twin):
    serve_echo_ports(twin)


@pytest.fixture
def plain(core):
    """A container without a process: the built-in shell answers."""
    core.create_namespaced_pod("default", {"metadata": {"name": "plain"}, "spec": {"containers": [
        {"name": "main", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]}})
    until(lambda: core.read_namespaced_pod("plain", "default").status.phase == "Running", "plain running")
    return "plain"


@pytest.fixture
def real(core):
    """A process container: exec runs the machine's own commands."""
    core.create_namespaced_pod("default", {"metadata": {"name": "real"}, "spec": {"containers": [
        {"name": "main", "image": "echo-ports:1", "command": ["python3", "/app/echo_ports.py"]}]}})
    until(lambda: "listening" in core.read_namespaced_pod_log("real", "default"), "real listening")
    return "real"


def session(core, pod: str, command: list[str], *, tty: bool = False):
    return stream(core.connect_post_namespaced_pod_exec, pod, "default", command=command, stdin=True,
                  stdout=True, stderr=True, tty=tty, _preload_content=False)


def read_until(ws, text: str, timeout: float = 20.0) -> str:
    """stdout so far, read until it contains `text` (a terminal's output has no line structure)."""
    seen = ""
    deadline = time.monotonic() + timeout
    while text not in seen and time.monotonic() < deadline and ws.is_open():
        seen += ws.read_stdout(timeout=1)  # without a timeout the client waits for data forever
    assert text in seen, f"{text!r} not in {seen!r}"
    return seen


@pytest.mark.parametrize("pod", ["plain", "real"])
def test_a_shell_runs_each_line_as_it_arrives(core, pod, request):
    request.getfixturevalue(pod)
    ws = session(core, pod, ["/bin/sh"])
    ws.write_stdin("echo test string 1\n")
    assert ws.readline_stdout(timeout=10) == "test string 1"
    assert not ws.peek_stderr()
    ws.write_stdin("false\n")
    ws.write_stdin("exit 3\n")
    ws.run_forever(timeout=20)
    assert not ws.is_open() and ws.returncode == 3


def test_a_real_shell_writes_stderr_on_its_own_channel(core, real):
    ws = session(core, real, ["/bin/sh"])
    ws.write_stdin("echo test string 2 >&2\n")
    assert ws.readline_stderr(timeout=10) == "test string 2"
    assert not ws.peek_stdout()
    ws.write_stdin("exit\n")
    ws.run_forever(timeout=20)
    assert ws.returncode == 0


@pytest.mark.parametrize("pod", ["plain", "real"])
def test_cat_echoes_input_before_its_end_and_exits_when_it_is_closed(core, pod, request):
    request.getfixturevalue(pod)
    ws = session(core, pod, ["/bin/sh", "-c", "cat"])
    assert ws.subprotocol == "v5.channel.k8s.io"
    ws.write_stdin("test-close\n")
    assert ws.readline_stdout(timeout=10) == "test-close"
    ws.close_channel(0)
    ws.run_forever(timeout=20)
    assert not ws.is_open() and ws.returncode == 0


def test_a_terminal_echoes_merges_stderr_and_takes_its_size(core, real):
    ws = session(core, real, ["/bin/sh"], tty=True)
    ws.write_channel(RESIZE_CHANNEL, json.dumps({"Width": 101, "Height": 37}))
    ws.write_stdin("stty size; echo to-stderr >&2\n")
    seen = read_until(ws, "to-stderr\r\n")
    assert "stty size" in seen            # the terminal echoes what was typed
    assert "37 101\r\n" in seen           # the resize reached it; output lines end in \r\n
    assert not ws.peek_stderr()           # a terminal has no separate stderr
    ws.write_stdin("exit 5\n")
    ws.run_forever(timeout=20)
    assert ws.returncode == 5


def test_a_client_that_goes_away_takes_its_command_with_it(twin, core, real):
    ws = session(core, real, ["sleep", "300"])
    until(lambda: any("300" in " ".join(map(str, p.args)) for p in twin.processes.children()), "sleep started")
    ws.close()
    until(lambda: not any("300" in " ".join(map(str, p.args)) for p in twin.processes.children()),
          "the exec'd command ended with its client")
