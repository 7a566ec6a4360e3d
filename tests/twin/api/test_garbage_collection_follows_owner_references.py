"""Garbage collection by ownerReferences for every kind, with the three propagation policies:
Background (the owner goes, then its dependents), Foreground (the owner waits with the
`foregroundDeletion` finalizer until its blocking dependents are gone) and Orphan (the
dependents stay and lose the reference)."""

from __future__ import annotations

from kubernetes import client
from kubernetes.client.rest import ApiException


def exists(read, name: str) -> bool:
    try:
        read(name, "default")
    except ApiException as exc:
        assert exc.status == 404
        return False
    return True


def owner_ref(obj, block: bool = False) -> dict:
    return {"apiVersion": "v1", "kind": obj.kind or "ConfigMap", "name": obj.metadata.name, "uid": obj.metadata.uid,
            **({"blockOwnerDeletion": True} if block else {})}


def configmap(core, name: str, *owners) -> client.V1ConfigMap:
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": name, "ownerReferences": list(owners)}})
    cm.kind = "ConfigMap"
    return cm


def test_a_configmap_owned_by_a_deleted_configmap_is_collected(core):
    owner = configmap(core, "owner")
    configmap(core, "dependent", owner_ref(owner))
    core.delete_namespaced_config_map("owner", "default")
    assert not exists(core.read_namespaced_config_map, "dependent")


def test_a_dependent_with_a_live_owner_left_only_loses_the_dead_reference(core):
    a, b = configmap(core, "a"), configmap(core, "b")
    configmap(core, "dependent", owner_ref(a), owner_ref(b))
    core.delete_namespaced_config_map("a", "default")
    refs = core.read_namespaced_config_map("dependent", "default").metadata.owner_references
    assert [r.name for r in refs] == ["b"]


def test_an_object_created_with_only_dead_owners_is_collected(core):
    owner = configmap(core, "owner")
    core.delete_namespaced_config_map("owner", "default")
    configmap(core, "late", owner_ref(owner))
    assert not exists(core.read_namespaced_config_map, "late")


def test_orphan_propagation_keeps_the_dependents_without_the_reference(core):
    owner = configmap(core, "owner")
    configmap(core, "dependent", owner_ref(owner))
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Orphan")
    assert not exists(core.read_namespaced_config_map, "owner")
    assert core.read_namespaced_config_map("dependent", "default").metadata.owner_references is None


def test_foreground_deletion_waits_for_blocking_dependents(twin, core, make_pod):
    owner = configmap(core, "owner")
    pod = make_pod("worker")
    pod["metadata"]["ownerReferences"] = [owner_ref(owner, block=True)]
    core.create_namespaced_pod("default", pod)
    configmap(core, "loose", owner_ref(owner))
    twin.clock.sleep(3)
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Foreground")
    held = core.read_namespaced_config_map("owner", "default")
    assert held.metadata.deletion_timestamp is not None and held.metadata.finalizers == ["foregroundDeletion"]
    assert core.read_namespaced_pod("worker", "default").metadata.deletion_timestamp is not None
    assert not exists(core.read_namespaced_config_map, "loose")  # deleted, but it never blocked
    twin.clock.sleep(1)  # the pod's containers stop, the pod goes, then the owner
    assert not exists(core.read_namespaced_pod, "worker")
    assert not exists(core.read_namespaced_config_map, "owner")


def test_an_unknown_propagation_policy_is_a_400(core):
    configmap(core, "c")
    try:
        core.delete_namespaced_config_map("c", "default", propagation_policy="Sideways")
    except ApiException as exc:
        assert exc.status == 400
    else:
        raise AssertionError("expected 400")
