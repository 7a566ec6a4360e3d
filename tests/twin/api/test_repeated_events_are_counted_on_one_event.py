"""The twin's own components post Events as client-go's recorder does: a repeat of an identical
Event (same source, object, type, reason and message) is counted on the Event already posted —
`count` up by one, `lastTimestamp` moved, `firstTimestamp` kept — instead of a new Event each time.
Once the first has expired, a repeat starts a new one."""

from __future__ import annotations

from stepgraph.twin.apiserver.store import EVENT_TTL_SECONDS

POD = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "default", "uid": "u-1"}}


def test_a_repeated_event_is_one_event_with_a_count(twin, core):
    twin.store.record_event(POD, "BackOff", "Back-off restarting failed container", type="Warning", component="kubelet")
    twin.clock.sleep(30)
    twin.store.record_event(POD, "BackOff", "Back-off restarting failed container", type="Warning", component="kubelet")
    twin.store.record_event(POD, "BackOff", "Back-off restarting failed container", type="Warning", component="kubelet")
    twin.store.record_event(POD, "BackOff", "another message", type="Warning", component="kubelet")
    events = {e.message: e for e in core.list_namespaced_event("default").items}
    assert sorted((m, e.count) for m, e in events.items()) == [
        ("Back-off restarting failed container", 3), ("another message", 1)]
    repeated = events["Back-off restarting failed container"]
    assert (repeated.last_timestamp - repeated.first_timestamp).total_seconds() == 30


def test_a_repeat_after_the_event_expired_is_a_new_event(twin, core):
    twin.store.record_event(POD, "Pulled", "already present", component="kubelet")
    twin.clock.sleep(EVENT_TTL_SECONDS)
    assert core.list_namespaced_event("default").items == []
    twin.store.record_event(POD, "Pulled", "already present", component="kubelet")
    [event] = core.list_namespaced_event("default").items
    assert event.count == 1

