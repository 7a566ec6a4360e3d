"""The twin's store is written from several threads at once — the API server's, the clock's
(the kubelet, controllers, the GPU side), a test's — and each write delivers its change to the
in-process subscribers on the writing thread, with the store's lock released. A write that held
the lock while it delivered would wait on a thread that is delivering and waits for the lock."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

POD = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "default", "uid": "u-1"}}


def _side_by_side(twin, write: Callable[[int], object]) -> None:
    """`write(i)` for 300 values of i on one thread while another creates config maps whose
    subscriber writes too; both must end."""
    twin.store.subscribe("configmaps", lambda etype, obj: twin.store.record_event(POD, "Seen", obj["metadata"]["name"]))
    stop = threading.Event()
    counter = itertools.count()

    def other() -> None:
        while not stop.is_set():
            twin.store.create("configmaps", "default", {"metadata": {"name": f"other-{next(counter)}"}})

    others = threading.Thread(target=other, daemon=True)
    others.start()
    writer = threading.Thread(target=lambda: [write(i) for i in range(300)], daemon=True)
    writer.start()
    writer.join(timeout=30)
    stop.set()
    others.join(timeout=30)
    assert not writer.is_alive() and not others.is_alive(), "the store's writers deadlocked"


def test_posting_a_repeated_event(twin):
    _side_by_side(twin, lambda i: twin.store.record_event(POD, "Tick", "the same message"))


def test_a_server_side_apply_that_creates(twin):
    _side_by_side(twin, lambda i: twin.store.patch("configmaps", "default", f"applied-{i}",
                                                   {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}},
                                                   patch_type="apply", field_manager="test"))
