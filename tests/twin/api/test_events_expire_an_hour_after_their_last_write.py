"""Events expire as on a real cluster: kube-apiserver stores each Event with a time to live
(--event-ttl, 1 h by default) that every write to it renews, and removes it when that runs out —
on the twin's clock, and a watch sees it go."""

from __future__ import annotations

import threading

import pytest
from kubernetes import watch
from kubernetes.client.rest import ApiException

EVENT = {"metadata": {"name": "ev"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
         "reason": "Tested", "message": "first", "type": "Normal"}


def exists(core, name: str = "ev") -> bool:
    try:
        core.read_namespaced_event(name, "default")
        return True
    except ApiException as exc:
        assert exc.status == 404
        return False


def test_an_event_is_gone_an_hour_after_it_was_written(twin, core):
    core.create_namespaced_event("default", EVENT)
    twin.clock.sleep(3599)
    assert exists(core)
    twin.clock.sleep(1)
    assert not exists(core)


def test_each_write_renews_the_hour(twin, core):
    core.create_namespaced_event("default", EVENT)
    twin.clock.sleep(1800)
    core.patch_namespaced_event("ev", "default", {"message": "again", "count": 2})
    twin.clock.sleep(1800)
    assert exists(core)  # an hour after it was created, half an hour after it was written
    twin.clock.sleep(1800)
    assert not exists(core)


def test_a_watch_sees_an_expired_event_deleted(twin, core):
    rv = core.create_namespaced_event("default", EVENT).metadata.resource_version
    seen: list[tuple[str, str]] = []
    w = watch.Watch()
    live = threading.Event()

    def follow() -> None:
        for event in w.stream(core.list_namespaced_event, "default", resource_version=rv, timeout_seconds=30):
            seen.append((event["type"], event["object"].metadata.name))
            live.set()
            if event["type"] == "DELETED":
                w.stop()

    follower = threading.Thread(target=follow)
    follower.start()
    core.create_namespaced_event("default", {**EVENT, "metadata": {"name": "marker"}})
    assert live.wait(timeout=30)  # the watch is open: time may pass now
    twin.clock.sleep(3600)
    follower.join(timeout=30)
    assert seen == [("ADDED", "marker"), ("DELETED", "ev")]


@pytest.mark.twin(seed=3)
def test_the_events_the_twin_records_expire_too(twin, core):
    core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]}})
    twin.clock.sleep(5)  # scheduled and started: the scheduler's and the kubelet's Events
    recorded = core.list_namespaced_event("default", field_selector="involvedObject.name=p").items
    assert {e.reason for e in recorded} >= {"Scheduled", "Started"}
    twin.clock.sleep(3600)
    assert core.list_namespaced_event("default", field_selector="involvedObject.name=p").items == []
