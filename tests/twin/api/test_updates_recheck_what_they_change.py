"""An update is checked again where it changes the object: what it shares with a stored object
that passed the checks is not walked again, and everything it changes is."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException


def refused(call) -> dict:
    with pytest.raises(ApiException) as caught:
        call()
    assert caught.value.status == 422, caught.value.body
    return json.loads(caught.value.body)


@pytest.fixture
def stored(core, make_pod):
    """A pod written twice since its creation: the store knows it passed every check."""
    core.create_namespaced_pod("default", make_pod("checked", labels={"app": "a"}, annotations={"n": "0"}))
    for i in (1, 2):
        core.patch_namespaced_pod("checked", "default", {"metadata": {"annotations": {"n": str(i)}}})
    return "checked"


def test_changed_labels_are_checked_with_the_annotations_unchanged(core, stored):
    status = refused(lambda: core.patch_namespaced_pod(stored, "default", {"metadata": {"labels": {"bad key!": "x"}}}))
    assert [c["field"] for c in status["details"]["causes"]] == ["metadata.labels"]


def test_changed_annotations_are_checked_with_the_labels_unchanged(core, stored):
    status = refused(lambda: core.patch_namespaced_pod(stored, "default", {"metadata": {"annotations": {"big": "x" * 300_000}}}))
    assert [(c["reason"], c["field"]) for c in status["details"]["causes"]] == [("FieldValueTooLong", "metadata.annotations")]


def test_a_changed_spec_is_checked_by_the_pod_rules_beyond_the_schema(core, stored):
    patch = [{"op": "replace", "path": "/spec/containers/0/image", "value": ""}]
    status = refused(lambda: core.patch_namespaced_pod(stored, "default", patch))
    assert "spec.containers[0].image" in [c["field"] for c in status["details"]["causes"]], status


def test_a_write_sharing_all_of_it_still_passes(core, stored):
    out = core.patch_namespaced_pod(stored, "default", {"metadata": {"annotations": {"n": "3"}}})
    assert out.metadata.labels == {"app": "a"} and out.metadata.annotations == {"n": "3"}
