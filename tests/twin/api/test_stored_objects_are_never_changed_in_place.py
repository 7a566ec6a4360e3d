"""Objects the store hands out without a copy never change afterwards.

GET, PATCH and watch answers are served from the store's own objects (no deep copy): that is
right only while every write stores a new object and leaves the one it replaces alone. Every
kind of write runs here against objects taken out shared; each must still equal the snapshot
taken when it was handed out.
"""

from __future__ import annotations

import contextlib
import copy

import pytest
from kubernetes import client
from kubernetes.stream import stream

from stepgraph.twin.apiserver import patches, schemas

POD = {"metadata": {"name": "shared", "labels": {"app": "a"}, "finalizers": ["example.com/hold"]},
       "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "env": [{"name": "A", "value": "1"}]}]}}


def test_writes_leave_objects_handed_out_shared_as_they_were(twin):
    store = twin.store
    client.CoreV1Api(twin.api_client()).create_namespace({"metadata": {"name": "immut"}})
    handed_out: list[tuple[dict, dict]] = []

    def keep(obj: dict) -> None:
        handed_out.append((obj, copy.deepcopy(obj)))

    watched: list[dict] = []

    def deliver(event: dict | None) -> None:
        if event is not None:
            watched.append(event["object"])
            keep(event["object"])

    watcher = store.watch("pods", "immut", deliver=deliver)
    keep(store.create("pods", "immut", POD, copy=False))
    twin.clock.sleep(3)  # scheduled, started: the scheduler's and the kubelet's own writes
    keep(store.get("pods", "immut", "shared", copy=False))
    # The pod's streams read the store's own object (exec, log, proxy): none may change it.
    core = client.CoreV1Api(twin.api_client())
    assert stream(core.connect_get_namespaced_pod_exec, "shared", "immut", command=["echo", "hi"], stderr=True,
                  stdin=False, stdout=True, tty=False) == "hi\n"
    core.read_namespaced_pod_log("shared", "immut")
    with contextlib.suppress(client.ApiException):  # nothing listens: an error answer, after reading the pod all the same
        core.connect_get_namespaced_pod_proxy_with_path("shared:80", "immut", "x")
    keep(store.patch("pods", "immut", "shared", {"metadata": {"annotations": {"a": "1"}}}, copy=False))
    keep(store.patch("pods", "immut", "shared", {"spec": {"containers": [{"name": "c", "image": "busybox:1.37"}]}},
                     patch_type="strategic", copy=False))
    keep(store.patch("pods", "immut", "shared", [{"op": "add", "path": "/metadata/labels/b", "value": "x"}],
                     patch_type="json", copy=False))
    keep(store.patch("pods", "immut", "shared", {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "shared", "annotations": {"owner": "me"}}}, patch_type=patches.APPLY_PATCH, field_manager="m",
        copy=False))
    status = store.get("pods", "immut", "shared")
    status["status"]["message"] = "hello"
    keep(store.replace("pods", "immut", "shared", status, subresource="status", copy=False))
    keep(store.replace("pods", "immut", "shared", store.get("pods", "immut", "shared"), copy=False))
    store.delete("pods", "immut", "shared")  # marked: grace period and a finalizer
    keep(store.get("pods", "immut", "shared", copy=False))
    store.patch("pods", "immut", "shared", {"metadata": {"finalizers": None}})
    twin.clock.sleep(35)  # the grace period runs out: the kubelet stops it and it goes
    store.delete("namespaces", None, "immut")
    twin.clock.sleep(5)
    store.unwatch(watcher)
    assert len(watched) >= 8
    changed = [shared["metadata"].get("resourceVersion") for shared, snapshot in handed_out if shared != snapshot]
    assert not changed



def scribble(value: object) -> None:
    """Every string in a JSON tree changed in place."""
    if isinstance(value, dict):
        for key in value:
            value[key] = "changed" if isinstance(value[key], str) else value[key]
            scribble(value[key])
    elif isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = "changed" if isinstance(item, str) else item
            scribble(item)


def new_container() -> dict:
    return {"name": "b", "image": "busybox:1.36", "env": [{"name": "X", "value": "1"}], "ports": [{"containerPort": 80}]}


@pytest.mark.parametrize(("kind", "make_patch", "containers"), [
    (patches.MERGE_PATCH, lambda: {"metadata": {"annotations": {"a": "1"}}, "spec": {"containers": [new_container()]}},
     ["b"]),
    (patches.STRATEGIC_PATCH, lambda: {"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [new_container()]}},
     ["c", "b"]),
    (patches.JSON_PATCH, lambda: [{"op": "add", "path": "/spec/containers/-", "value": new_container()},
                                  {"op": "add", "path": "/metadata/labels", "value": {"a": "1"}}], ["c", "b"]),
])
def test_a_patched_object_holds_nothing_of_the_patch(kind: str, make_patch, containers: list[str]) -> None:
    """The store keeps a patch's result without copying it again: a caller that changes its patch
    afterwards must not change the stored object (here: a list item new to a merged list too)."""
    patch = make_patch()
    result = patches.apply(kind, copy.deepcopy(POD), patch, builtin=True, schema=schemas.kind_schema("", "v1", "Pod"))
    kept = copy.deepcopy(result)
    scribble(patch)
    assert result == kept
    assert [c["name"] for c in result["spec"]["containers"]] == containers
