"""Server-side apply as the real server does it: `managedFields` per field manager, a 409 that
names the manager owning a field another applies differently, `force` moving ownership, and the
fields a manager stops applying removed (unless someone else owns them)."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException


def apply(core, manager: str, data: dict, force: bool = False):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data}
    return core.patch_namespaced_config_map("c", "default", body, field_manager=manager, force=force,
                                            _content_type="application/apply-patch+yaml")


def owners(cm) -> dict:
    return {e.manager: (e.operation, e.fields_v1) for e in cm.metadata.managed_fields or []}


def test_apply_records_what_each_manager_owns(core):
    cm = apply(core, "alice", {"a": "1", "b": "2"})
    assert owners(cm) == {"alice": ("Apply", {"f:data": {"f:a": {}, "f:b": {}}})}


def test_a_conflicting_apply_is_a_409_naming_the_owner(core):
    apply(core, "alice", {"a": "1"})
    with pytest.raises(ApiException) as err:
        apply(core, "bob", {"a": "2"})
    assert err.value.status == 409
    body = json.loads(err.value.body)
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "alice" using v1: .data.a'
    assert body["details"]["causes"][0]["reason"] == "FieldManagerConflict"
    assert apply(core, "bob", {"a": "1"}).data == {"a": "1"}  # the same value is shared, not a conflict


def test_force_takes_the_field_over(core):
    apply(core, "alice", {"a": "1", "b": "2"})
    cm = apply(core, "bob", {"a": "2"}, force=True)
    assert cm.data == {"a": "2", "b": "2"}
    assert owners(cm) == {"bob": ("Apply", {"f:data": {"f:a": {}}}), "alice": ("Apply", {"f:data": {"f:b": {}}})}


def test_fields_a_manager_stops_applying_are_removed_unless_another_owns_them(core):
    apply(core, "alice", {"a": "1", "b": "2"})
    apply(core, "bob", {"b": "2"})
    assert apply(core, "alice", {}).data == {"b": "2"}  # a went; b stays, bob owns it too


def test_an_update_with_a_field_manager_owns_what_it_changed(core):
    apply(core, "alice", {"a": "1"})
    core.patch_namespaced_config_map("c", "default", {"data": {"a": "edited"}}, field_manager="carol")
    with pytest.raises(ApiException) as err:
        apply(core, "alice", {"a": "1"})
    assert err.value.status == 409 and '"carol"' in json.loads(err.value.body)["message"]


def test_apply_needs_a_field_manager(core):
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("c", "default", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
                                         _content_type="application/apply-patch+yaml")
    assert err.value.status == 400
