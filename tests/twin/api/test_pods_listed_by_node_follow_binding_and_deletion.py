"""A pod list by `spec.nodeName` (every kubelet's and agent's, every tick) is answered from a
per-node index; it must answer what a scan of every pod would, while pods are created unbound,
bound by the scheduler, created bound, and deleted."""

from __future__ import annotations

import pytest

from stepgraph.twin.apiserver.selectors import field_value


def pod(name: str, node: str | None = None, selector: dict | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]}
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = selector
    return {"metadata": {"name": name}, "spec": spec}


def scanned(store, namespace, node: str) -> list[str]:
    return [p["metadata"]["name"] for p in store.list("pods", namespace) if field_value(p, "spec.nodeName") == node]


def listed(core, namespace, selector: str) -> list[str]:
    pods = (core.list_namespaced_pod(namespace, field_selector=selector) if namespace
            else core.list_pod_for_all_namespaces(field_selector=selector))
    return [p.metadata.name for p in pods.items]


@pytest.mark.twin(seed=5)
def test_lists_by_node_match_a_scan_through_every_change(twin, core):
    store, node = twin.store, store_node(twin)
    nodes = ("", node, "n2")
    core.create_namespace({"metadata": {"name": "other"}})
    core.create_namespaced_pod("default", pod("bound-elsewhere", "n2"))  # created bound, as a DaemonSet's
    core.create_namespaced_pod("other", pod("bound-here", node))
    core.create_namespaced_pod("default", pod("pending", selector={"no-such": "node"}))  # stays unbound
    core.create_namespaced_pod("default", pod("scheduled"))  # created unbound, then bound by the scheduler
    before = {n: listed(core, None, f"spec.nodeName={n}") for n in nodes}
    for namespace in ("default", "other"):
        assert [listed(core, namespace, f"spec.nodeName={n}") for n in nodes] == \
            [scanned(store, namespace, n) for n in nodes]
    assert listed(core, "default", f"spec.nodeName={node},metadata.name=scheduled") == ["scheduled"]
    assert listed(core, None, f"spec.nodeName!={node}") == ["bound-elsewhere", "pending"]
    core.delete_namespaced_pod("bound-elsewhere", "default", grace_period_seconds=0)
    core.delete_namespaced_pod("pending", "default")
    after = {n: listed(core, None, f"spec.nodeName={n}") for n in nodes}
    assert before == {"": ["pending"], node: ["scheduled", "bound-here"], "n2": ["bound-elsewhere"]}
    assert after == {"": [], node: ["scheduled", "bound-here"], "n2": []}


def store_node(twin) -> str:
    nodes = twin.store.list("nodes")
    assert len(nodes) == 1
    return nodes[0]["metadata"]["name"]
