"""The twin's own components post Events as client-go's recorder does: a repeat of an identical
Event (same source, object, type, reason and message) is counted on the Event already posted —
`count` up by one, `lastTimestamp` moved, `firstTimestamp` kept — instead of a new Event each time.
Once the first has expired, a repeat starts a new one."""

from __future__ import annotations

import threading

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


def test_events_posted_while_other_threads_write_never_deadlock(twin):
    # The kubelet posts Events from the clock's thread while the API server writes from its own,
    # and each write delivers to subscribers on the writing thread: counting a repeat must not
    # hold the store's lock across a write, or the two threads wait on each other for ever.
    twin.store.subscribe("configmaps", lambda etype, obj: twin.store.record_event(POD, "Seen", obj["metadata"]["name"]))
    stop = threading.Event()

    def post() -> None:
        while not stop.is_set():
            twin.store.record_event(POD, "Tick", "the same message")

    poster = threading.Thread(target=post, daemon=True)
    poster.start()
    writer = threading.Thread(target=lambda: [twin.store.create("configmaps", "default", {"metadata": {"name": f"c{i}"}})
                                              for i in range(300)], daemon=True)
    writer.start()
    writer.join(timeout=30)
    stop.set()
    poster.join(timeout=30)
    assert not writer.is_alive() and not poster.is_alive(), "the store's writers deadlocked"
