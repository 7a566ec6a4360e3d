"""Write options the client exposes: dryRun, server-side apply, generateName, status subresource,
collection delete, cluster-wide lists of custom resources, label/annotation validation."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException


def test_dry_run_checks_everything_and_stores_nothing(core):
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "dry"}}, dry_run="All")
    assert cm.metadata.name == "dry" and cm.metadata.uid
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("dry", "default")
    assert err.value.status == 404
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", {"metadata": {"name": "Bad_Name"}}, dry_run="All")
    assert err.value.status == 422
    core.create_namespaced_config_map("default", {"metadata": {"name": "real"}, "data": {"a": "1"}})
    core.patch_namespaced_config_map("real", "default", {"data": {"a": "2"}}, dry_run="All")
    core.delete_namespaced_config_map("real", "default", dry_run="All")
    assert core.read_namespaced_config_map("real", "default").data == {"a": "1"}


def test_server_side_apply_creates_then_updates(core):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"a": "1"}}
    created = core.patch_namespaced_config_map("ssa", "default", body, field_manager="test",
                                               _content_type="application/apply-patch+yaml")
    assert created.data == {"a": "1"}
    body["data"]["b"] = "2"
    updated = core.patch_namespaced_config_map("ssa", "default", body, field_manager="test",
                                               _content_type="application/apply-patch+yaml")
    assert updated.data == {"a": "1", "b": "2"} and updated.metadata.uid == created.metadata.uid


def test_generate_name_gives_unique_seeded_names(core):
    a = core.create_namespaced_config_map("default", {"metadata": {"generateName": "job-"}})
    b = core.create_namespaced_config_map("default", {"metadata": {"generateName": "job-"}})
    assert a.metadata.name.startswith("job-") and len(a.metadata.name) == 9 and a.metadata.name != b.metadata.name


def test_pod_status_subresource_changes_status_only(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("p"))
    out = core.patch_namespaced_pod_status("p", "default", {"metadata": {"labels": {"sneaky": "1"}},
                                                            "status": {"message": "hello"}})
    assert out.status.message == "hello" and "sneaky" not in (out.metadata.labels or {})
    ignored = core.patch_namespaced_pod("p", "default", {"status": {"message": "via main"}})
    assert ignored.status.message == "hello"


def test_delete_collection_with_a_label_selector(core):
    for name, labels in (("a", {"x": "1"}), ("b", {"x": "1"}), ("c", {})):
        core.create_namespaced_config_map("default", {"metadata": {"name": name, "labels": labels}})
    core.delete_collection_namespaced_config_map("default", label_selector="x=1")
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["c", "kube-root-ca.crt"]


@pytest.mark.parametrize("labels", [{"ok": "has space"}, {"bad key!": "v"}, {"k": "x" * 64}, {"-k": "v"}])
def test_invalid_labels_are_422(core, labels):
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", {"metadata": {"name": "l", "labels": labels}})
    assert err.value.status == 422
    assert json.loads(err.value.body)["details"]["causes"][0]["field"] == "metadata.labels"


def test_valid_prefixed_labels_and_annotations_pass(core):
    md = {"name": "ok", "labels": {"nvidia.com/dynamo-graph-deployment-name": "vllm-dgd-a", "empty": ""},
          "annotations": {"dynamo.nvidia.com/gpu-power-limit": "350"}}
    assert core.create_namespaced_config_map("default", {"metadata": md}).metadata.labels["empty"] == ""


def test_events_tell_the_pod_story(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("story"))
    twin.clock.sleep(3)
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=story").items
    reasons = [e.reason for e in sorted(events, key=lambda e: int(e.metadata.resource_version))]
    assert reasons == ["Scheduled", "Pulled", "Created", "Started"]
