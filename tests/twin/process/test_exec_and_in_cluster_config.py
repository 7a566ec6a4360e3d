"""Exec into a process container runs the real command in the container's environment; a program
configures itself in-cluster and talks HTTPS to the API server with the pod's CA and token."""

from __future__ import annotations

import socket
import ssl
from concurrent.futures import ThreadPoolExecutor

from kubernetes import client
from kubernetes.stream import stream
from process_rig import eventually, tiny_pod

IN_CLUSTER = """
from kubernetes import client, config
config.load_incluster_config()
pods = client.CoreV1Api().list_namespaced_pod("default")
print(client.Configuration.get_default_copy().host)
print(sorted(p.metadata.name for p in pods.items))
"""

NO_CA = """
import os, ssl, urllib.request
try:
    urllib.request.urlopen(f"https://127.0.0.1:{os.environ['KUBERNETES_SERVICE_PORT']}/version", timeout=10)
except urllib.error.URLError as err:
    print(type(err.reason).__name__, err.reason.verify_message)
"""


def run(core, pod: str, argv: list[str]) -> tuple[str, str, int]:
    resp = stream(core.connect_get_namespaced_pod_exec, pod, "default", command=argv, stdout=True, stderr=True,
                  stdin=False, tty=False, _preload_content=False)
    resp.run_forever(timeout=60)
    out, err = resp.read_stdout(), resp.read_stderr()
    return out, err, resp.returncode


def started(core, name: str) -> None:
    eventually(lambda: "ready" in core.read_namespaced_pod_log(name, "default"), what=f"{name} ready")


def test_exec_runs_the_real_command_with_the_containers_environment(twin, core, tiny):
    core.create_namespaced_pod("default", tiny_pod("box", env={"GREETING": "hi"}))
    started(core, "box")
    out, _, code = run(core, "box", ["python3", "-c", "import os, sys; print(os.environ['GREETING'], os.environ['HOSTNAME']);"
                                                      " sys.exit(4)"])
    assert (out, code) == ("hi box\n", 4)
    out, err, code = run(core, "box", ["no-such-command"])
    assert code == 127 and 'exec: "no-such-command": executable file not found in $PATH' in err


def test_an_exec_d_cat_reads_the_twins_cgroup_of_a_host_pid(twin, core, tiny):
    # what the catalog's pod-process check runs in the agent pod (hostPID): a program that is not Python
    worker = twin.host.spawn("0d6c5f0e-52a4-4a5c-9d69-1f9d0a3b7c11", ["python", "-m", "worker"])
    core.create_namespaced_pod("default", tiny_pod("reader", hostPID=True))
    started(core, "reader")
    out, err, code = run(core, "reader", ["cat", f"/proc/{worker.pid}/cgroup"])
    assert (out, code) == (twin.host.cgroup(worker.pid), 0), err


def test_a_program_configures_itself_in_cluster_over_https_with_the_pods_ca(twin, core, tiny):
    # The pod's token is its service account, with the rights RBAC gives it: listing pods needs a grant.
    rbac = client.RbacAuthorizationV1Api(core.api_client)
    rbac.create_namespaced_role("default", {"metadata": {"name": "pod-reader"}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]})
    rbac.create_namespaced_role_binding("default", {
        "metadata": {"name": "pod-reader"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]})
    core.create_namespaced_pod("default", tiny_pod("incluster"))
    started(core, "incluster")
    out, err, code = run(core, "incluster", ["python3", "-c", IN_CLUSTER])
    assert code == 0, err
    host, names = out.splitlines()
    assert host == f"https://127.0.0.1:{twin.server.https_port}" and names == "['incluster']"
    # it is TLS with the twin's own CA: without the pod's ca.crt the certificate is not trusted
    out, _, _ = run(core, "incluster", ["python3", "-c", NO_CA])
    assert out.startswith("SSLCertVerificationError"), out


BIND_AGAIN = """
import socket
try:
    socket.socket().bind(("0.0.0.0", 8080))
except OSError as err:
    print(err.errno)
"""


def test_each_pod_has_its_own_ports_reached_through_the_proxy_and_from_inside(twin, core, tiny):
    for name in ("web-a", "web-b"):  # both listen on 8080: one port space per pod, as on a node
        core.create_namespaced_pod("default", tiny_pod(name, env={"MODE": "http"}))
    for name in ("web-a", "web-b"):
        started(core, name)
        assert core.connect_get_namespaced_pod_proxy_with_path(f"{name}:8080", "default", "hello") == f"{name} /hello"
    out, err, code = run(core, "web-a", ["python3", "-c", "import urllib.request; "
                                         "print(urllib.request.urlopen('http://localhost:8080/in').read().decode())"])
    assert (out, code) == ("web-a /in\n", 0), err
    out, _, _ = run(core, "web-a", ["python3", "-c", BIND_AGAIN])
    assert out == "98\n"  # EADDRINUSE: the pod's 8080 is taken


def test_a_service_reaches_the_programs_port(twin, core, tiny):
    body = tiny_pod("svc-backend", env={"MODE": "http", "PORT": "9000"})
    body["metadata"]["labels"] = {"app": "backend"}
    body["spec"]["containers"][0]["ports"] = [{"name": "web", "containerPort": 9000}]
    core.create_namespaced_pod("default", body)
    core.create_namespaced_service("default", {"metadata": {"name": "backend"}, "spec": {
        "selector": {"app": "backend"}, "ports": [{"port": 80, "targetPort": "web"}]}})
    started(core, "svc-backend")
    assert core.connect_get_namespaced_service_proxy_with_path("backend:80", "default", "x") == "svc-backend /x"


def test_a_pod_starting_while_the_twin_starts_waits_for_the_https_listener():
    # A world's start hooks apply manifests before the API server serves; on a real-time clock a
    # kubelet may start a process container (which needs the HTTPS port) meanwhile.
    from stepgraph.twin import Twin

    pool = ThreadPoolExecutor(max_workers=1)
    asked = []
    with Twin(seed=0, hooks=[lambda t: asked.append(pool.submit(t.server.serve_tls, t.ca.server_context()))]) as t:
        port = asked[0].result(timeout=30)
        assert port == t.server.https_port != 0
        with socket.create_connection(("127.0.0.1", port)) as raw, \
                ssl.create_default_context(cadata=t.ca.ca_pem).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.version()  # the handshake with the twin's CA succeeded
    pool.shutdown()
