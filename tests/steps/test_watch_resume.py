"""A watch through the client layer survives what watches meet on a real server: a stream that
ends (the twin's `watch_drop` switch, over HTTP) is opened again from the last resourceVersion
seen, and a version compacted away (410 Gone; the twin keeps a short history here) makes it list
again and carry on — each change seen once, none missed."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from stepgraph.steps._clients import api_client, retrying
from stepgraph.steps._watch import RELISTED, list_and_watch
from stepgraph.twin import Twin
from stepgraph.twin.world import load_world, profile
from stepgraph.twin.world_install import build_twin


class Requests:
    """`ApiClient.call_api` counted by kind (watches apart), then retried as the steps' client is."""

    def __init__(self, api: client.ApiClient) -> None:
        self.watches = 0
        counted = api.call_api

        def call(*args: Any, **kwargs: Any) -> Any:
            url = str(kwargs.get("url") or (args[1] if len(args) > 1 else ""))
            self.watches += "watch=true" in url.lower()
            return counted(*args, **kwargs)

        api.call_api = retrying(call, time.sleep)  # type: ignore[method-assign]


@pytest.fixture
def start_twin() -> Iterator[Callable[..., Twin]]:
    """Start a Path B twin (with a watch history of N events; its fault switches over HTTP); every
    one started is stopped after the test."""
    started: list[Twin] = []

    def start(watch_history: int = 20_000) -> Twin:
        started.append(build_twin(load_world(profile("path-b")), watch_history=watch_history).start())
        return started[-1]

    yield start
    for twin in started:
        twin.stop()


def _faults(twin: Twin, **switches: object) -> None:
    call = urllib.request.Request(f"{twin.base_url}/twin/v1/faults", data=json.dumps(switches).encode(), method="PATCH",
                                  headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(call, timeout=5):
        pass


def _core(twin: Twin) -> tuple[client.CoreV1Api, Requests]:
    api = api_client(str(twin.kubeconfig_path))
    return client.CoreV1Api(api), Requests(api)


OURS = "made-by=this-test"  # not the namespace's own objects (its kube-root-ca.crt)


def _create(core: client.CoreV1Api, *names: str) -> None:
    for name in names:
        core.create_namespaced_config_map("default", {"metadata": {"name": name, "labels": {"made-by": "this-test"}}})


def _names(items: list[Any]) -> list[str]:
    return sorted(item.metadata.name for item in items)


def test_a_watch_that_keeps_being_dropped_resumes_and_sees_every_change_once(start_twin: Callable[..., Twin]) -> None:
    twin = start_twin()
    core, requests = _core(twin)
    _faults(twin, api_fault_rate=0.5, api_fault_kinds=["watch_drop"])
    seen: list[tuple[str, Any]] = []
    for kind, obj in list_and_watch(core.list_namespaced_config_map, "default", label_selector=OURS, timeout_s=30):
        seen.append((kind, _names(obj) if kind == RELISTED else obj.metadata.name))
        if len(seen) == 1:
            _create(core, *(f"c{i}" for i in range(6)))  # once listed, the changes to watch
        if len(seen) == 7:
            break
    assert seen == [(RELISTED, []), *(("ADDED", f"c{i}") for i in range(6))]
    assert requests.watches > 1, "no watch was dropped: the fault switch did not reach the watch"


def test_a_watch_from_a_compacted_version_lists_again_and_carries_on(start_twin: Callable[..., Twin]) -> None:
    core, _ = _core(start_twin(watch_history=5))
    seen: list[tuple[str, Any]] = []
    for kind, obj in list_and_watch(core.list_namespaced_config_map, "default", label_selector=OURS, timeout_s=30):
        seen.append((kind, _names(obj) if kind == RELISTED else obj.metadata.name))
        if len(seen) == 1:
            _create(core, *(f"c{i}" for i in range(10)))  # more changes than the history keeps: 410 Gone
        elif len(seen) == 2:
            _create(core, "late")  # after the new list: seen by the resumed watch
        else:
            break
    assert seen == [(RELISTED, []), (RELISTED, [f"c{i}" for i in range(10)]), ("ADDED", "late")]
