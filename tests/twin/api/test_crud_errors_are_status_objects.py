"""CRUD through the official client: identity fields, resourceVersion, 404/409 as Status objects."""

from __future__ import annotations

import base64
import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException


def status_of(exc: ApiException) -> dict:
    return json.loads(exc.body)


def test_discovery_lists_core_apps_and_crd_groups(k8s):
    assert client.VersionApi(k8s).get_code().git_version.startswith("v1.")
    assert client.CoreApi(k8s).get_api_versions().versions == ["v1"]
    groups = {g.name for g in client.ApisApi(k8s).get_api_versions().groups}
    assert {"apps", "apiextensions.k8s.io"} <= groups
    core_names = {r.name for r in client.CoreV1Api(k8s).get_api_resources().resources}
    assert {"pods", "pods/exec", "pods/log", "pods/status", "pods/proxy", "namespaces", "configmaps",
            "secrets", "events", "nodes", "serviceaccounts", "services"} <= core_names
    assert {"daemonsets", "deployments"} <= {r.name for r in client.AppsV1Api(k8s).get_api_resources().resources}


def test_create_sets_identity_and_resource_version(core):
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "c1"}, "data": {"a": "1"}})
    assert cm.metadata.uid and cm.metadata.creation_timestamp and int(cm.metadata.resource_version) > 0
    again = core.read_namespaced_config_map("c1", "default")
    assert again.metadata.uid == cm.metadata.uid and again.data == {"a": "1"}
    listed = core.list_namespaced_config_map("default")
    assert int(listed.metadata.resource_version) >= int(cm.metadata.resource_version)


def test_create_of_an_existing_name_is_409_already_exists(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "dup"}})
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", {"metadata": {"name": "dup"}})
    body = status_of(err.value)
    assert err.value.status == 409 and body["kind"] == "Status" and body["reason"] == "AlreadyExists"
    assert body["details"] == {"name": "dup", "kind": "configmaps"}


def test_missing_object_is_404_not_found(core):
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("nope", "default")
    body = status_of(err.value)
    assert err.value.status == 404 and body["reason"] == "NotFound" and body["message"] == 'pods "nope" not found'


def test_missing_namespace_is_404(core):
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("ghost", {"metadata": {"name": "x"}})
    assert err.value.status == 404 and status_of(err.value)["message"] == 'namespaces "ghost" not found'


def test_replace_with_stale_resource_version_is_409_conflict(core):
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "rv"}, "data": {"v": "1"}})
    stale = cm.metadata.resource_version
    cm.data = {"v": "2"}
    fresh = core.replace_namespaced_config_map("rv", "default", cm)
    assert int(fresh.metadata.resource_version) > int(stale)
    cm.metadata.resource_version = stale
    cm.data = {"v": "3"}
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("rv", "default", cm)
    assert err.value.status == 409 and status_of(err.value)["reason"] == "Conflict"
    assert core.read_namespaced_config_map("rv", "default").data == {"v": "2"}  # nothing corrupted


def test_generation_bumps_on_spec_change_not_on_metadata(apps):
    dep = {"metadata": {"name": "d"}, "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "d"}},
           "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}}}
    created = apps.create_namespaced_deployment("default", dep)
    assert created.metadata.generation == 1
    labelled = apps.patch_namespaced_deployment("d", "default", {"metadata": {"labels": {"k": "v"}}})
    assert labelled.metadata.generation == 1
    scaled = apps.patch_namespaced_deployment("d", "default", {"spec": {"replicas": 2}})
    assert scaled.metadata.generation == 2


def test_secret_string_data_is_stored_base64_encoded(core):
    core.create_namespaced_secret("default", {"metadata": {"name": "s"}, "stringData": {"token": "abc"}})
    secret = core.read_namespaced_secret("s", "default")
    assert base64.b64decode(secret.data["token"]) == b"abc" and secret.type == "Opaque"


def test_every_namespace_gets_a_default_service_account(core):
    core.create_namespace({"metadata": {"name": "team-a"}})
    assert core.read_namespaced_service_account("default", "team-a").metadata.name == "default"


def test_services_and_nodes(core):
    svc = core.create_namespaced_service("default", {"metadata": {"name": "hostengine"},
                                                     "spec": {"clusterIP": "None", "ports": [{"port": 5555}]}})
    assert svc.spec.cluster_ip == "None" and svc.spec.ports[0].protocol == "TCP"
    other = core.create_namespaced_service("default", {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
    assert other.spec.cluster_ip.startswith("10.96.")
    node = core.list_node().items[0]
    assert node.metadata.labels["power-test/node"] == "target"
    assert node.metadata.labels["nvidia.com/gpu.present"] == "true"
    assert node.status.capacity["nvidia.com/gpu"] == "8"
    patched = core.patch_node(node.metadata.name, {"metadata": {"labels": {"extra": "yes"}}})
    assert patched.metadata.labels["extra"] == "yes"


def test_delete_returns_status_and_object_is_gone(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "bye"}})
    result = core.delete_namespaced_config_map("bye", "default")
    assert (result["status"] if isinstance(result, dict) else result.status) == "Success"
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("bye", "default")
    assert err.value.status == 404


def test_list_pages_with_limit_and_continue(core):
    for i in range(5):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"p{i}"}})
    first = core.list_namespaced_config_map("default", limit=2)
    # six in all: every namespace also holds the root-CA ConfigMap, as on a real cluster
    assert len(first.items) == 2 and first.metadata._continue and first.metadata.remaining_item_count == 4
    names = [i.metadata.name for i in first.items]
    token = first.metadata._continue
    while token:
        page = core.list_namespaced_config_map("default", limit=2, _continue=token)
        names += [i.metadata.name for i in page.items]
        token = page.metadata._continue
    assert names == ["kube-root-ca.crt"] + [f"p{i}" for i in range(5)]


def test_a_failing_in_process_subscriber_does_not_fail_the_write(twin, core):
    seen = []
    twin.store.subscribe("configmaps", lambda etype, obj: 1 / 0)
    twin.store.subscribe("configmaps", lambda etype, obj: seen.append((etype, obj["metadata"]["name"])))
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "ok"}})
    assert created.metadata.name == "ok" and seen == [("ADDED", "ok")]
