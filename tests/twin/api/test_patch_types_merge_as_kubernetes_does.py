"""The three patch types through the official client, and their error paths."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException


def two_container_pod(make_pod):
    body = make_pod("p", containers=[
        {"name": "a", "image": "img:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
        {"name": "b", "image": "img:1"}])
    body["metadata"]["annotations"] = {"keep": "me"}
    return body


def test_strategic_merge_merges_containers_and_env_by_name(core, make_pod):
    core.create_namespaced_pod("default", two_container_pod(make_pod))
    patched = core.patch_namespaced_pod("p", "default", {"spec": {"containers": [
        {"name": "b", "image": "img:2"}]}})  # dict body → strategic-merge-patch+json
    by_name = {c.name: c for c in patched.spec.containers}
    assert [c.name for c in patched.spec.containers] == ["a", "b"]
    assert by_name["b"].image == "img:2" and by_name["a"].image == "img:1"
    assert [e.name for e in by_name["a"].env] == ["X", "Y"]


def test_strategic_merge_delete_directive_and_null_removes_keys(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "c", "labels": {"a": "1", "b": "2"},
                                                               "finalizers": ["x/one"]}})
    out = core.patch_namespaced_config_map("c", "default", {"metadata": {"labels": {"a": None},
                                                                         "finalizers": ["x/two"]}})
    assert out.metadata.labels == {"b": "2"}
    assert out.metadata.finalizers == ["x/one", "x/two"]  # finalizers merge as a set


def test_merge_patch_merges_maps_and_replaces_lists(apps):
    dep = {"metadata": {"name": "d", "annotations": {"keep": "me"}},
           "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "d"}}, "template": {
               "metadata": {"labels": {"app": "d"}},
               "spec": {"containers": [{"name": "a", "image": "i:1"}, {"name": "b", "image": "i:1"}]}}}}
    apps.create_namespaced_deployment("default", dep)
    out = apps.patch_namespaced_deployment("d", "default", {
        "metadata": {"annotations": {"new": "1"}},
        "spec": {"template": {"spec": {"containers": [{"name": "b", "image": "i:2"}]}}}},
        _content_type="application/merge-patch+json")
    assert out.metadata.annotations == {"keep": "me", "new": "1"}
    assert [(c.name, c.image) for c in out.spec.template.spec.containers] == [("b", "i:2")]


def test_json_patch_ops(core, make_pod):
    core.create_namespaced_pod("default", two_container_pod(make_pod))
    out = core.patch_namespaced_pod("p", "default", [
        {"op": "add", "path": "/metadata/annotations/dynamo.nvidia.com~1gpu-power-limit", "value": "350"},
        {"op": "replace", "path": "/spec/containers/1/image", "value": "img:3"}])
    assert out.metadata.annotations["dynamo.nvidia.com/gpu-power-limit"] == "350"
    assert out.spec.containers[1].image == "img:3"


def test_failed_json_patch_test_op_is_422_and_changes_nothing(core, make_pod):
    core.create_namespaced_pod("default", two_container_pod(make_pod))
    before = core.read_namespaced_pod("p", "default").metadata.resource_version
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod("p", "default", [{"op": "test", "path": "/metadata/name", "value": "other"}])
    assert err.value.status == 422
    assert core.read_namespaced_pod("p", "default").metadata.resource_version == before


def test_wrong_patch_content_type_is_415(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("c", "default", {"data": {"a": "b"}}, _content_type="application/json")
    assert err.value.status == 415 and json.loads(err.value.body)["reason"] == "UnsupportedMediaType"


def test_changing_immutable_pod_fields_is_422(core, make_pod):
    core.create_namespaced_pod("default", two_container_pod(make_pod))
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod("p", "default", {"spec": {"restartPolicy": "Always"}})
    assert err.value.status == 422 and "pod updates may not change fields" in json.loads(err.value.body)["message"]


def test_patch_carrying_a_stale_resource_version_is_409(core):
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    core.patch_namespaced_config_map("c", "default", {"data": {"a": "1"}})
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("c", "default", {"metadata": {"resourceVersion": cm.metadata.resource_version},
                                                          "data": {"a": "2"}})
    assert err.value.status == 409
