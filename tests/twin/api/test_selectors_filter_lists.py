"""Label selectors (equality, set-based, exists, not-exists) and field selectors over HTTP."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException

ROOT_CA = "kube-root-ca.crt"  # in every namespace, without labels, as on a real cluster


@pytest.fixture
def labelled(core):
    for name, labels in (("a", {"tier": "prefill", "dgd": "x"}), ("b", {"tier": "decode", "dgd": "x"}),
                         ("c", {"tier": "decode"}), ("d", {})):
        core.create_namespaced_config_map("default", {"metadata": {"name": name, "labels": labels}})
    return core


def names(items):
    return sorted(i.metadata.name for i in items)


@pytest.mark.parametrize("selector,expected", [
    ("tier=decode", ["b", "c"]),
    ("tier==decode", ["b", "c"]),
    ("tier!=decode", ["a", "d", ROOT_CA]),
    ("tier in (prefill, decode),dgd=x", ["a", "b"]),
    ("tier notin (prefill)", ["b", "c", "d", ROOT_CA]),
    ("dgd", ["a", "b"]),
    ("!dgd", ["c", "d", ROOT_CA]),
    ("", ["a", "b", "c", "d", ROOT_CA]),
])
def test_label_selector(labelled, selector, expected):
    assert names(labelled.list_namespaced_config_map("default", label_selector=selector).items) == expected


@pytest.mark.parametrize("selector", ["tier in (", "tier in ()", "=x", "a b"])
def test_malformed_label_selector_is_400(labelled, selector):
    with pytest.raises(ApiException) as err:
        labelled.list_namespaced_config_map("default", label_selector=selector)
    assert err.value.status == 400 and json.loads(err.value.body)["reason"] == "BadRequest"


def test_field_selectors_on_pods(twin, core, make_pod):
    core.create_namespace({"metadata": {"name": "other"}})
    core.create_namespaced_pod("default", make_pod("p1"))
    core.create_namespaced_pod("other", make_pod("p2"))
    twin.clock.sleep(5)
    core.create_namespaced_pod("default", make_pod("pending", node_selector={"no": "such"}))

    def sel(s):
        return names(core.list_pod_for_all_namespaces(field_selector=s).items)
    assert sel("metadata.name=p1") == ["p1"]
    assert sel("metadata.namespace=other") == ["p2"]
    assert sel(f"spec.nodeName={twin.node.name}") == ["p1", "p2"]
    assert sel("status.phase=Pending") == ["pending"]
    assert sel("status.phase!=Pending,metadata.namespace=default") == ["p1"]


def test_unknown_field_selector_is_400(core):
    with pytest.raises(ApiException) as err:
        core.list_namespaced_pod("default", field_selector="spec.nope=1")
    assert err.value.status == 400 and "not a known field selector" in json.loads(err.value.body)["message"]
