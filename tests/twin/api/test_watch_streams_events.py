"""Watch through `kubernetes.watch.Watch`: ADDED/MODIFIED/DELETED, resume, timeout, selectors."""

from __future__ import annotations

import threading

import pytest
from kubernetes import watch
from kubernetes.client.rest import ApiException


def collect(fn, *args, stop_after: int, **kwargs) -> list[tuple[str, str]]:
    """Run a watch until `stop_after` events arrived (or the server-side timeout ends it)."""
    w, seen = watch.Watch(), []
    for event in w.stream(fn, *args, timeout_seconds=10, **kwargs):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) >= stop_after:
            w.stop()
    return seen


def test_watch_from_a_resource_version_sees_added_modified_deleted(core):
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "w"}})
    core.patch_namespaced_config_map("w", "default", {"data": {"a": "1"}})
    core.delete_namespaced_config_map("w", "default")
    events = collect(core.list_namespaced_config_map, "default", stop_after=3, resource_version=rv)
    assert events == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_watch_without_resource_version_starts_with_current_objects(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "there"}})
    assert collect(core.list_namespaced_config_map, "default", stop_after=2) == [
        ("ADDED", "kube-root-ca.crt"), ("ADDED", "there")]


def test_live_events_arrive_while_watching(core):
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    writer = threading.Timer(0.05, lambda: core.create_namespaced_config_map("default", {"metadata": {"name": "live"}}))
    writer.start()
    try:
        assert collect(core.list_namespaced_config_map, "default", stop_after=1, resource_version=rv) == [("ADDED", "live")]
    finally:
        writer.join()


def test_timeout_seconds_ends_an_idle_watch(core):
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    w = watch.Watch()
    events = list(w.stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1))
    assert events == []


def test_label_selected_watch_sees_an_object_leave_as_deleted(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "l", "labels": {"pick": "yes"}}})
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.patch_namespaced_config_map("l", "default", {"metadata": {"labels": {"pick": "no"}}})
    core.patch_namespaced_config_map("l", "default", {"metadata": {"labels": {"pick": "yes"}}})
    events = collect(core.list_namespaced_config_map, "default", stop_after=2, resource_version=rv,
                     label_selector="pick=yes")
    assert events == [("DELETED", "l"), ("ADDED", "l")]


def test_watch_is_scoped_to_its_namespace(core):
    core.create_namespace({"metadata": {"name": "elsewhere"}})
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("elsewhere", {"metadata": {"name": "not-me"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "me"}})
    assert collect(core.list_namespaced_config_map, "default", stop_after=1, resource_version=rv) == [("ADDED", "me")]


@pytest.mark.twin(watch_history=5)
def test_too_old_resource_version_is_410_gone(core):
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    for i in range(10):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
    with pytest.raises(ApiException) as err:
        collect(core.list_namespaced_config_map, "default", stop_after=1, resource_version=rv)
    assert err.value.status == 410
