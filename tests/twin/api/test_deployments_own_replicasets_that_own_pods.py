"""Deployment → ReplicaSet → pods, as on a real cluster: the ReplicaSet is named after the
pod-template-hash its pods carry, a new template gets a new ReplicaSet (the old one scaled to 0),
and deleting with `--cascade=orphan` leaves the ReplicaSet and its pods running."""

from __future__ import annotations

from kubernetes.client.rest import ApiException


def deployment(replicas=2, image="op:1") -> dict:
    return {"metadata": {"name": "op"}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": "op"}},
        "template": {"metadata": {"labels": {"app": "op"}}, "spec": {"containers": [{"name": "m", "image": image}]}}}}


def live_pods(core):
    return [p for p in core.list_namespaced_pod("default", label_selector="app=op").items
            if not p.metadata.deletion_timestamp]


def test_a_deployment_owns_a_replicaset_that_owns_the_pods(twin, core, apps):
    dep = apps.create_namespaced_deployment("default", deployment())
    [rs] = apps.list_namespaced_replica_set("default").items
    pth = rs.metadata.labels["pod-template-hash"]
    assert rs.metadata.name == f"op-{pth}" and rs.metadata.owner_references[0].uid == dep.metadata.uid
    assert rs.spec.selector.match_labels == {"app": "op", "pod-template-hash": pth}
    pods = live_pods(core)
    assert len(pods) == 2
    for pod in pods:
        assert pod.metadata.name.startswith(f"op-{pth}-") and pod.metadata.labels["pod-template-hash"] == pth
        assert [(r.kind, r.uid, r.controller) for r in pod.metadata.owner_references] == [("ReplicaSet", rs.metadata.uid, True)]
    twin.clock.sleep(3)
    assert apps.read_namespaced_replica_set(rs.metadata.name, "default").status.ready_replicas == 2
    assert apps.read_namespaced_deployment("op", "default").status.available_replicas == 2


def test_a_new_template_gets_a_new_replicaset_and_the_old_one_scales_to_zero(twin, core, apps):
    apps.create_namespaced_deployment("default", deployment())
    [old] = apps.list_namespaced_replica_set("default").items
    apps.patch_namespaced_deployment("op", "default", {"spec": {"template": {"spec": {"containers": [
        {"name": "m", "image": "op:2"}]}}}})
    sets = {rs.metadata.name: rs for rs in apps.list_namespaced_replica_set("default").items}
    assert len(sets) == 2 and sets[old.metadata.name].spec.replicas == 0
    [new] = [rs for name, rs in sets.items() if name != old.metadata.name]
    assert new.metadata.annotations["deployment.kubernetes.io/revision"] == "2"
    twin.clock.sleep(3)
    assert {p.spec.containers[0].image for p in live_pods(core)} == {"op:2"}


def test_cascade_orphan_keeps_the_replicaset_and_its_pods(twin, core, apps):
    apps.create_namespaced_deployment("default", deployment())
    twin.clock.sleep(3)
    apps.delete_namespaced_deployment("op", "default", propagation_policy="Orphan")
    twin.clock.sleep(1)
    [rs] = apps.list_namespaced_replica_set("default").items
    assert rs.metadata.owner_references is None
    assert len(live_pods(core)) == 2


def test_deleting_a_deployment_cascades_to_replicasets_and_pods(twin, core, apps):
    apps.create_namespaced_deployment("default", deployment())
    twin.clock.sleep(3)
    apps.delete_namespaced_deployment("op", "default")
    twin.clock.sleep(1)
    assert apps.list_namespaced_replica_set("default").items == []
    assert core.list_namespaced_pod("default", label_selector="app=op").items == []


def test_a_replication_controller_keeps_its_replicas_and_orphans_by_default(twin, core):
    core.create_namespaced_replication_controller("default", {"metadata": {"name": "rc"}, "spec": {
        "replicas": 2, "template": {"metadata": {"labels": {"app": "op"}},
                                    "spec": {"containers": [{"name": "m", "image": "op:1"}]}}}})
    rc = core.read_namespaced_replication_controller("rc", "default")
    assert rc.spec.selector == {"app": "op"}  # defaulted from the template's labels
    [first, _] = live_pods(core)
    core.delete_namespaced_pod(first.metadata.name, "default", grace_period_seconds=0)
    assert len(live_pods(core)) == 2
    core.delete_namespaced_replication_controller("rc", "default")
    try:
        core.read_namespaced_replication_controller("rc", "default")
    except ApiException as exc:
        assert exc.status == 404
    assert len(live_pods(core)) == 2  # core/v1 ReplicationControllers orphan unless told otherwise
