"""The root-CA publisher: `kube-root-ca.crt` in every active namespace, holding the CA that verifies
the API server's HTTPS listener, recreated when deleted and put back when changed."""

from __future__ import annotations

import socket
import ssl

ROOT_CA = "kube-root-ca.crt"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")


def test_every_namespace_has_the_root_ca_configmap(twin, core):
    core.create_namespace({"metadata": {"name": "fresh"}})
    for ns in ("default", "kube-system", "fresh"):
        cm = core.read_namespaced_config_map(ROOT_CA, ns)
        assert cm.data == {"ca.crt": twin.ca.ca_pem}
        assert cm.metadata.annotations == {"kubernetes.io/description": DESCRIPTION}


def test_the_published_ca_verifies_the_api_server_by_its_service_name(twin, core):
    pem = core.read_namespaced_config_map(ROOT_CA, "default").data["ca.crt"]
    port, _ = twin._api_server_for_pods()
    context = ssl.create_default_context(cadata=pem)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="kubernetes.default.svc") as tls:
        tls.sendall(b"GET /version HTTP/1.1\r\nHost: kubernetes.default.svc\r\nConnection: close\r\n\r\n")
        assert tls.recv(64).startswith(b"HTTP/1.1 200")


def test_a_deleted_or_changed_root_ca_is_published_again(twin, core):
    core.delete_namespaced_config_map(ROOT_CA, "default")
    assert core.read_namespaced_config_map(ROOT_CA, "default").data == {"ca.crt": twin.ca.ca_pem}
    core.patch_namespaced_config_map(ROOT_CA, "default", {"data": {"ca.crt": "not a CA", "extra": "x"}})
    assert core.read_namespaced_config_map(ROOT_CA, "default").data == {"ca.crt": twin.ca.ca_pem}


def test_a_terminating_namespace_gets_no_new_root_ca(twin, core, make_pod):
    core.create_namespace({"metadata": {"name": "going"}})
    core.create_namespaced_pod("going", make_pod("p"))
    twin.clock.sleep(3)  # a running pod keeps the namespace terminating for its grace period
    core.delete_namespace("going")
    assert core.read_namespace("going").status.phase == "Terminating"
    assert [c.metadata.name for c in core.list_namespaced_config_map("going").items] == []
