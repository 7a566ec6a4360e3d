"""CRDs through ApiextensionsV1Api and DynamoGraphDeployments through CustomObjectsApi."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

GROUP, PLURAL = "nvidia.com", "dynamographdeployments"


def dgd_crd(name=f"{PLURAL}.{GROUP}") -> dict:
    spec_schema = {"type": "object", "properties": {
        "backendFramework": {"type": "string", "enum": ["sglang", "vllm", "trtllm"]},
        "services": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 0}}, "x-kubernetes-preserve-unknown-fields": True}},
        "components": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}
    schema = {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": spec_schema, "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": PLURAL, "singular": "dynamographdeployment", "kind": "DynamoGraphDeployment",
                               "listKind": "DynamoGraphDeploymentList", "shortNames": ["dgd"]},
                     "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": schema,
                                   "subresources": {"status": {}}},
                                  {"name": "v1beta1", "served": True, "storage": False, "schema": schema,
                                   "subresources": {"status": {}}}]}}


def dgd(name: str, version: str = "v1alpha1", **spec) -> dict:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "DynamoGraphDeployment",
            "metadata": {"name": name, "labels": {"purpose": "power-aware-multi-dgd-test"}},
            "spec": {"backendFramework": "vllm", "services": {"VllmDecodeWorker": {"replicas": 1}}, **spec}}


@pytest.fixture
def crd(ext):
    created = ext.create_custom_resource_definition(dgd_crd())
    return created


def test_crd_becomes_established_and_discoverable(k8s, ext, crd):
    got = ext.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
    conditions = {c.type: c.status for c in got.status.conditions}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert got.status.stored_versions == ["v1alpha1"]
    versions = {g.name: [v.version for v in g.versions] for g in client.ApisApi(k8s).get_api_versions().groups}
    assert versions["nvidia.com"] == ["v1alpha1", "v1beta1"]


def test_custom_resource_crud_in_both_served_versions(custom, crd):
    created = custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, dgd("vllm-dgd-a"))
    assert created["metadata"]["uid"] and created["metadata"]["generation"] == 1
    beta = custom.get_namespaced_custom_object(GROUP, "v1beta1", "default", PLURAL, "vllm-dgd-a")
    assert beta["apiVersion"] == "nvidia.com/v1beta1" and beta["metadata"]["uid"] == created["metadata"]["uid"]
    listed = custom.list_namespaced_custom_object(GROUP, "v1beta1", "default", PLURAL,
                                                  label_selector="purpose=power-aware-multi-dgd-test")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["vllm-dgd-a"]
    patched = custom.patch_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "vllm-dgd-a",
                                                    {"spec": {"services": {"VllmDecodeWorker": {"replicas": 2}}}})
    assert patched["spec"]["services"]["VllmDecodeWorker"]["replicas"] == 2 and patched["metadata"]["generation"] == 2
    jp = custom.patch_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "vllm-dgd-a",
                                               [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}],
                                               _content_type="application/json-patch+json")
    assert jp["metadata"]["annotations"] == {"a": "b"} and jp["metadata"]["generation"] == 2
    custom.delete_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "vllm-dgd-a")
    with pytest.raises(ApiException) as err:
        custom.get_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "vllm-dgd-a")
    assert err.value.status == 404


def test_status_subresource_is_separate_from_spec(custom, crd):
    custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, dgd("d"))
    ignored = custom.patch_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "d", {"status": {"state": "x"}})
    assert "status" not in ignored
    st = custom.patch_namespaced_custom_object_status(GROUP, "v1alpha1", "default", PLURAL, "d",
                                                      {"status": {"state": "successful"}})
    assert st["status"] == {"state": "successful"} and st["metadata"]["generation"] == 1


def test_schema_violation_is_422_with_the_field_path(custom, crd):
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, dgd("bad", backendFramework="tgi"))
    body = json.loads(err.value.body)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "spec.backendFramework"


def test_strategic_merge_on_a_custom_resource_is_415(custom, crd):
    custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, dgd("d"))
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "d", {"spec": {}},
                                              _content_type="application/strategic-merge-patch+json")
    assert err.value.status == 415


def test_unserved_version_and_unknown_resource_are_404(custom, crd):
    for version, plural in (("v2", PLURAL), ("v1alpha1", "nothings")):
        with pytest.raises(ApiException) as err:
            custom.list_namespaced_custom_object(GROUP, version, "default", plural)
        assert err.value.status == 404


def test_crd_name_must_match_plural_and_group(ext):
    with pytest.raises(ApiException) as err:
        ext.create_custom_resource_definition(dgd_crd(name="wrong.nvidia.com"))
    assert err.value.status == 422 and "spec.names.plural" in json.loads(err.value.body)["message"]


def test_deleting_the_crd_removes_its_resources_and_endpoint(ext, custom, crd):
    custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, dgd("d"))
    ext.delete_custom_resource_definition(f"{PLURAL}.{GROUP}")
    with pytest.raises(ApiException) as err:
        custom.list_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL)
    assert err.value.status == 404
    ext.create_custom_resource_definition(dgd_crd())
    assert custom.list_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL)["items"] == []


def test_dynamic_client_discovers_the_kind_in_both_versions(k8s, crd):
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    dc = DynamicClient(k8s)
    for version in ("v1alpha1", "v1beta1"):
        res = dc.resources.get(api_version=f"{GROUP}/{version}", kind="DynamoGraphDeployment")
        assert res.name == PLURAL and res.namespaced
    res = dc.resources.get(api_version=f"{GROUP}/v1beta1", kind="DynamoGraphDeployment")
    res.create(body=dgd("via-dynamic", version="v1beta1"), namespace="default")
    assert res.get(name="via-dynamic", namespace="default").metadata.name == "via-dynamic"
    with pytest.raises(ResourceNotFoundError):
        dc.resources.get(api_version="example.com/v1", kind="Widget")


def test_table_requests_use_the_crd_printer_columns(twin, ext, custom):
    crd = dgd_crd()
    for v in crd["spec"]["versions"]:
        v["additionalPrinterColumns"] = [{"name": "Backend", "type": "string", "jsonPath": ".spec.backendFramework"},
                                         {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    ext.create_custom_resource_definition(crd)
    custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, dgd("t"))
    import urllib.request
    req = urllib.request.Request(f"{twin.base_url}/apis/{GROUP}/v1alpha1/namespaces/default/{PLURAL}",
                                 headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        table = json.loads(resp.read())
    assert table["kind"] == "Table" and [c["name"] for c in table["columnDefinitions"]] == ["Name", "Backend", "Age"]
    assert table["rows"][0]["cells"][:2] == ["t", "vllm"]
