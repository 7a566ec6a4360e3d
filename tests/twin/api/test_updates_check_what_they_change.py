"""An update checks only the top-level fields it changed, and that is the same verdict as
checking the whole object.

A metadata patch of a running pod re-checked its whole spec and status (most of a PATCH's
validation time). A kind whose schema checks an object field by field gives the same verdict on
the fields that changed, once the object they replace passed the same check; the fields it
shares with that object are skipped. The store trusts only an object it stored after an update's
check, under the same version.
"""

from __future__ import annotations

import copy

import pytest
from test_compiled_validation_agrees_with_jsonschema import POD, REPLACEMENTS, _paths

from stepgraph.twin.apiserver import schemas
from stepgraph.twin.apiserver.errors import ApiError


def _variants_sharing_the_rest():
    """Every leaf and container of one top-level field replaced by every JSON type, or given an
    unknown field; the other top-level fields are POD's own (the same objects)."""
    for field in ("metadata", "spec", "status"):
        for path in _paths(POD[field]):
            values = [*REPLACEMENTS, "unknown"] if path else REPLACEMENTS
            for value in values:
                part = copy.deepcopy(POD[field])
                if not path:
                    part = value
                else:
                    parent = part
                    for key in path[:-1]:
                        parent = parent[key]
                    if value == "unknown":
                        if not isinstance(parent[path[-1]], dict):
                            continue
                        parent[path[-1]]["zzUnknown"] = 1
                    else:
                        parent[path[-1]] = value
                yield {**POD, field: part}
    yield {**POD, "zzUnknown": 1}
    yield {k: v for k, v in POD.items() if k != "status"}


def test_checking_what_changed_gives_the_whole_objects_verdict():
    variants = list(_variants_sharing_the_rest())
    assert schemas.validate("", "v1", "Pod", POD) == ([], [])
    differ = [v for v in variants
              if schemas.validate("", "v1", "Pod", v, valid_before=POD) != schemas.validate("", "v1", "Pod", v)]
    rejected = [v for v in variants if schemas.validate("", "v1", "Pod", v) != ([], [])]
    assert len(variants) > 300 and len(rejected) > 200
    assert not differ


def test_a_kind_checked_field_by_field_is_told_apart_from_one_that_is_not():
    assert schemas._fieldwise(schemas.definition_name("", "v1", "Pod")) == frozenset()
    assert schemas._fieldwise(schemas.definition_name("apps", "v1", "DaemonSet")) == {"spec"}
    assert schemas._fieldwise("io.k8s.apimachinery.pkg.util.intstr.IntOrString") is None


def test_the_store_still_refuses_a_bad_update_after_good_ones(twin):
    store = twin.store
    store.create("pods", "default", {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "busybox:1.36"}]}})
    for i in range(3):  # updates whose checks the store then trusts for the unchanged parts
        store.patch("pods", "default", "p", {"metadata": {"annotations": {"i": str(i)}}})
        store.patch("pods", "default", "p", {"status": {"message": str(i)}}, subresource="status")
    with pytest.raises(ApiError) as bad_status:
        store.patch("pods", "default", "p", {"status": {"message": 3}}, subresource="status")
    with pytest.raises(ApiError) as bad_spec:
        store.patch("pods", "default", "p", {"spec": {"activeDeadlineSeconds": "soon"}})
    with pytest.raises(ApiError) as bad_meta:
        store.patch("pods", "default", "p", {"metadata": {"labels": {"a": 1}}})
    assert [e.value.code for e in (bad_status, bad_spec, bad_meta)] == [422, 422, 422]
    assert store.get("pods", "default", "p")["status"]["message"] == "2"
