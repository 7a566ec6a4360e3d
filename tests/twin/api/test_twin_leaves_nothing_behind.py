"""Starting and stopping a twin leaves no threads, no listening port and no files behind."""

from __future__ import annotations

import socket
import threading

from kubernetes import client, watch
from kubernetes.stream import stream
from stepgraph.twin import NodeConfig, Twin


def test_stop_releases_threads_port_and_workdir():
    before = {t.name for t in threading.enumerate()}
    with Twin(clock="real", node=NodeConfig(startup_delay=0)) as twin:
        api_client = twin.api_client()
        api = client.CoreV1Api(api_client)
        api.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}})
        for event in watch.Watch().stream(api.list_namespaced_pod, "default", timeout_seconds=10):
            if event["object"].status.phase == "Running":
                break
        assert stream(api.connect_get_namespaced_pod_exec, "p", "default", command=["echo", "x"],
                      stderr=True, stdin=False, stdout=True, tty=False) == "x\n"
        api_client.close()
        port, workdir = twin.server.port, twin.kubeconfig_path.parent
    assert {t.name for t in threading.enumerate()} <= before
    assert not workdir.exists()
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
