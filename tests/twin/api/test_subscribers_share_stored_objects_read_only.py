"""In-process subscribers (scheduler, kubelets, controllers, garbage collector) get the stored
object itself, not a copy each: none of them may change what it is handed.

A copy per subscriber per event made a multi-node twin's start superlinear (every kubelet copied
every pod event). Sharing is right only while no subscriber writes into what it gets, now or
later; a recorder subscribed first keeps a snapshot of everything delivered while workloads of
every controller run on two nodes, and every object must still equal its snapshot at the end.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from stepgraph.twin import Twin
from stepgraph.twin.node import NodeConfig

NS = "shared-reads"


def _pod_template(labels: dict) -> dict:
    return {"metadata": {"labels": labels}, "spec": {
        "terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "1"]}]}}


def _workloads(twin: Twin) -> None:
    store = twin.store
    store.create("namespaces", None, {"metadata": {"name": NS}})
    store.create("pods", NS, {"metadata": {"name": "solo", "labels": {"app": "solo"}}, "spec": {
        "terminationGracePeriodSeconds": 2,
        "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]}})
    store.create("daemonsets.apps", NS, {"metadata": {"name": "ds"}, "spec": {
        "selector": {"matchLabels": {"app": "ds"}}, "template": {**_pod_template({"app": "ds"}), "spec": {
            "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]}}}})
    store.create("deployments.apps", NS, {"metadata": {"name": "dep"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "dep"}}, "template": {**_pod_template({"app": "dep"}),
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]}}}})
    store.create("jobs.batch", NS, {"metadata": {"name": "job"}, "spec": {"template": _pod_template({"app": "job"})}})
    owner = store.create("configmaps", NS, {"metadata": {"name": "owner"}})
    store.create("configmaps", NS, {"metadata": {"name": "owned", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"],
         "blockOwnerDeletion": True}]}})
    twin.clock.sleep(10)
    store.patch("configmaps", NS, "kube-root-ca.crt", {"data": {"ca.crt": "changed"}})  # the publisher restores it
    store.patch("deployments.apps", NS, "dep", {"spec": {"template": {"metadata": {"labels": {"rev": "2"}}}}})
    store.patch("pods", NS, "solo", {"metadata": {"annotations": {"a": "1"}}})
    store.delete("configmaps", NS, "owner", propagation="Foreground")
    twin.clock.sleep(10)
    store.delete("pods", NS, "solo")
    store.delete("namespaces", None, NS)
    twin.clock.sleep(30)


def _changed_after_delivery(also: Callable[[Twin], None] | None = None) -> list[tuple[str, str, str]]:
    delivered: list[tuple[str, str, dict, str]] = []
    with Twin(seed=1, nodes=[NodeConfig(name="node-a"), NodeConfig(name="node-b")]) as twin:
        twin.store.subscribe_all(lambda resource, etype, obj: delivered.append(
            (resource, etype, obj, json.dumps(obj))))
        if also is not None:
            also(twin)
        _workloads(twin)
    kinds = {resource for resource, *_ in delivered}
    assert {"pods", "daemonsets.apps", "deployments.apps", "replicasets.apps", "jobs.batch", "configmaps",
            "namespaces", "events"} <= kinds, kinds
    return [(resource, etype, obj["metadata"].get("name", "")) for resource, etype, obj, snapshot in delivered
            if json.dumps(obj) != snapshot]


def test_no_subscriber_changes_an_object_it_was_handed():
    assert _changed_after_delivery() == []


def test_a_subscriber_that_writes_into_its_object_is_seen():
    def meddle(twin: Twin) -> None:
        twin.store.subscribe("pods", lambda etype, pod: pod["metadata"].get("labels", {}).update(meddled="yes"))

    assert any(resource == "pods" for resource, _, _ in _changed_after_delivery(meddle))
