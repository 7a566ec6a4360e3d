"""DaemonSet (one pod per matching node) and Deployment (replicas) controllers, with cascading delete."""

from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException


def ds_body(name="agent", node_selector=None):
    return {"metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": {"app.kubernetes.io/component": name}},
        "template": {"metadata": {"labels": {"app.kubernetes.io/component": name}},
                     "spec": {"nodeSelector": node_selector or {"nvidia.com/gpu.present": "true"},
                              "containers": [{"name": "agent", "image": "agent:1",
                                              "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]}}}}


def pods_of(core, selector):
    return core.list_namespaced_pod("default", label_selector=selector).items


def test_daemonset_places_one_ready_pod_on_the_matching_node(twin, core, apps):
    apps.create_namespaced_daemon_set("default", ds_body())
    [pod] = pods_of(core, "app.kubernetes.io/component=agent")
    assert pod.spec.node_name == twin.node.name and pod.metadata.owner_references[0].kind == "DaemonSet"
    twin.clock.sleep(3)
    status = apps.read_namespaced_daemon_set("agent", "default").status
    assert (status.desired_number_scheduled, status.number_ready) == (1, 1)


def test_daemonset_for_another_node_places_nothing_until_the_node_matches(twin, core, apps):
    apps.create_namespaced_daemon_set("default", ds_body(node_selector={"power-test/node": "kaim"}))
    assert pods_of(core, "app.kubernetes.io/component=agent") == []
    core.patch_node(twin.node.name, {"metadata": {"labels": {"power-test/node": "kaim"}}})
    assert len(pods_of(core, "app.kubernetes.io/component=agent")) == 1
    core.patch_node(twin.node.name, {"metadata": {"labels": {"power-test/node": "target"}}})
    twin.clock.sleep(1)
    assert all(p.metadata.deletion_timestamp for p in pods_of(core, "app.kubernetes.io/component=agent"))


def test_a_deleted_daemonset_pod_is_replaced(twin, core, apps):
    apps.create_namespaced_daemon_set("default", ds_body())
    [first] = pods_of(core, "app.kubernetes.io/component=agent")
    core.delete_namespaced_pod(first.metadata.name, "default", grace_period_seconds=0)
    [second] = pods_of(core, "app.kubernetes.io/component=agent")
    assert second.metadata.uid != first.metadata.uid


def test_deleting_a_daemonset_deletes_its_pods(twin, core, apps):
    apps.create_namespaced_daemon_set("default", ds_body())
    twin.clock.sleep(3)
    apps.delete_namespaced_daemon_set("agent", "default")
    twin.clock.sleep(1)
    assert pods_of(core, "app.kubernetes.io/component=agent") == []


def test_deployment_runs_replicas_and_reports_available(twin, core, apps):
    apps.create_namespaced_deployment("default", {"metadata": {"name": "op"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "op"}},
        "template": {"metadata": {"labels": {"app": "op"}}, "spec": {"containers": [{"name": "m", "image": "op:1"}]}}}})
    assert len(pods_of(core, "app=op")) == 2
    twin.clock.sleep(3)
    dep = apps.read_namespaced_deployment("op", "default")
    assert dep.status.available_replicas == 2
    assert {c.type: c.status for c in dep.status.conditions} == {"Available": "True", "Progressing": "True"}
    apps.patch_namespaced_deployment("op", "default", {"spec": {"replicas": 1}})
    twin.clock.sleep(1)
    assert len([p for p in pods_of(core, "app=op") if not p.metadata.deletion_timestamp]) == 1
    apps.delete_namespaced_deployment("op", "default")
    twin.clock.sleep(1)
    assert pods_of(core, "app=op") == []
    with pytest.raises(ApiException):
        apps.read_namespaced_deployment("op", "default")


def test_a_changed_template_replaces_the_daemonset_pod_on_every_node():
    # Controllers over two nodes (the Twin facade has one): both pods turn stale at once,
    # and each must be replaced — none may be skipped while the stale ones are removed.
    import random

    from stepgraph.twin.apiserver.resources import ResourceTypes
    from stepgraph.twin.apiserver.store import Store
    from stepgraph.twin.clock import VirtualClock
    from stepgraph.twin.controllers import Controllers
    from stepgraph.twin.host import Host
    from stepgraph.twin.node import DeviceAllocator, GpuInventory, Node, NodeConfig

    def node(name: str) -> Node:
        inv = GpuInventory.generate(8, random.Random(name))
        return Node(NodeConfig(name=name), inv, Host(random.Random(0)), DeviceAllocator(inv, random.Random(0), "random"))

    store = Store(ResourceTypes(), VirtualClock(), random.Random(0))
    store.create("namespaces", None, {"metadata": {"name": "default"}})
    Controllers(store, [node("gpu-a"), node("gpu-b")], random.Random(0))
    store.create("daemonsets.apps", "default", ds_body())
    before = {p["metadata"]["name"] for p in store.list("pods", "default")}
    store.patch("daemonsets.apps", "default", "agent", {"spec": {"template": {"metadata": {"labels": {"rev": "2"}}}}})
    live = [p for p in store.list("pods", "default") if not p["metadata"].get("deletionTimestamp")]
    assert len(before) == 2
    assert sorted(p["spec"]["nodeName"] for p in live) == ["gpu-a", "gpu-b"]
    assert {p["metadata"]["labels"]["pod-template-generation"] for p in live} == {"2"}
    assert not before & {p["metadata"]["name"] for p in live}
