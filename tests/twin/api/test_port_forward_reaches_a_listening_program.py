"""pods/portforward with the official client's `kubernetes.stream.portforward` (websocket,
`v4.channel.k8s.io`): bytes reach a process container's real listening socket and come back, a
port where nothing listens gets the runtime's "connection refused" on its error channel (as a
container without a process always does), and kubectl's SPDY is refused before the upgrade."""

from __future__ import annotations

import select
import shutil
import socket
import subprocess
import time

import pytest
from echo_ports import REAL_CLOCK_TWIN, serve_echo_ports, until
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import portforward

pytestmark = REAL_CLOCK_TWIN


@pytest.fixture(autouse=True)
def echo_ports(twin):
    serve_echo_ports(twin)


def echo_pod(core, name: str, *ports: int) -> None:
    core.create_namespaced_pod("default", {"metadata": {"name": name}, "spec": {"containers": [
        {"name": "main", "image": "echo-ports:1", "command": ["python3", "/app/echo_ports.py", *map(str, ports)]}]}})
    until(lambda: "listening" in core.read_namespaced_pod_log(name, "default"), f"{name} listening")


def exchange(sock, sent: bytes) -> bytes:
    sock.sendall(sent)
    reply = b""
    deadline = time.monotonic() + 20
    while len(reply) < len(sent) and time.monotonic() < deadline:
        if select.select([sock], [], [], 1)[0]:
            data = sock.recv(1024)
            if not data:
                break
            reply += data
    return reply


def test_each_port_carries_bytes_both_ways_and_a_closed_port_reports_refused(twin, core):
    echo_pod(core, "echo", 1234, 1235)
    pf = portforward(core.connect_get_namespaced_pod_portforward, "echo", "default", ports="1234,1235,1236")
    assert pf.connected
    first, second = pf.socket(1234), pf.socket(1235)
    first.settimeout(20)  # every wait below is bounded, whatever the server does
    second.settimeout(20)
    assert exchange(first, b"to 1234") == b"to 1234"
    assert exchange(second, b"to 1235") == b"to 1235"

    closed = pf.socket(1236)
    closed.settimeout(20)
    assert closed.recv(1024) == b""
    message = pf.error(1236)
    assert message.startswith("error forwarding port 1236 to pod ")
    assert "failed to connect to localhost:1236 inside namespace" in message
    assert "dial tcp4 127.0.0.1:1236: connect: connection refused" in message
    assert pf.error(1234) is None and pf.error(1235) is None

    assert exchange(first, b"again") == b"again"  # the other forwards go on
    for sock in (first, second, closed):
        sock.close()
    until(lambda: not pf.connected, "the websocket closed after every local socket did")


def test_the_forward_ends_when_the_program_closes_its_connection(twin, core):
    echo_pod(core, "closer", 4000)
    pf = portforward(core.connect_get_namespaced_pod_portforward, "closer", "default", ports="4000")
    sock = pf.socket(4000)
    sock.settimeout(20)
    sock.sendall(b"bye\n")
    assert sock.recv(1024) == b""
    until(lambda: not pf.connected, "the websocket closed once its only forward ended")
    assert pf.error(4000) is None


def test_a_container_without_a_process_listens_nowhere(core, make_pod, twin):
    core.create_namespaced_pod("default", make_pod("plain"))
    until(lambda: core.read_namespaced_pod("plain", "default").status.phase == "Running", "plain running")
    pf = portforward(core.connect_get_namespaced_pod_portforward, "plain", "default", ports="80")
    sock = pf.socket(80)
    sock.settimeout(20)
    assert sock.recv(1024) == b""
    assert "failed to connect to localhost:80 inside namespace" in pf.error(80)


def test_an_unscheduled_pod_and_bad_ports_are_refused_before_the_upgrade(core, make_pod, twin):
    core.create_namespaced_pod("default", make_pod("nowhere", node_selector={"no": "such-node"}))
    with pytest.raises(ApiException, match=r"400.*pod nowhere does not have a host assigned"):
        portforward(core.connect_get_namespaced_pod_portforward, "nowhere", "default", ports="80")
    echo_pod(core, "echo", 1234)
    # The client checks the ports itself; the server's own answer, for clients that do not.
    http = socket.create_connection(("127.0.0.1", twin.server.port))
    with http:
        http.sendall(b"GET /api/v1/namespaces/default/pods/echo/portforward?ports=0 HTTP/1.1\r\n"
                     b"Host: twin\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                     b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n")
        answer = http.recv(4096)
    assert answer.startswith(b"HTTP/1.1 400") and b'port \\"0\\" must be \\u003e 0' in answer


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_port_forward_is_refused_with_what_the_twin_speaks(twin, core, tmp_path):
    echo_pod(core, "echo", 1234)
    done = subprocess.run(["kubectl", "--kubeconfig", str(twin.kubeconfig_path), "port-forward", "pod/echo",
                           ":1234"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "port-forward over SPDY is not served by the twin" in done.stderr
