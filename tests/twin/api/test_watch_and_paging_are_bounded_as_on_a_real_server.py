"""Watch history and list paging bounded as on a real server: a resourceVersion older than the
compaction window (5 minutes) is 410 Expired for a watch and for a continue token; `limit`/
`continue` pages come from one snapshot; bookmarks arrive when asked for."""

from __future__ import annotations

import json
import urllib.request

import pytest
from kubernetes import watch
from kubernetes.client.rest import ApiException


def test_a_watch_from_before_the_compaction_window_is_410(twin, core):
    old_rv = core.create_namespaced_config_map("default", {"metadata": {"name": "a"}}).metadata.resource_version
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})  # an event the window then loses
    twin.clock.sleep(301)
    core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=old_rv,
                                      timeout_seconds=2):
            pass
    assert err.value.status == 410


def test_a_watch_within_the_window_replays_what_happened(twin, core):
    rv = core.create_namespaced_config_map("default", {"metadata": {"name": "a"}}).metadata.resource_version
    twin.clock.sleep(120)
    core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
    events = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1)]
    assert events == [("ADDED", "b")]


def names(page) -> list[str]:
    return [c.metadata.name for c in page.items]


def test_continue_pages_come_from_one_snapshot(core):
    for n in "abcd":
        core.create_namespaced_config_map("default", {"metadata": {"name": n, "labels": {"page": "t"}}})
    first = core.list_namespaced_config_map("default", label_selector="page=t", limit=2)
    assert names(first) == ["a", "b"] and first.metadata.remaining_item_count == 2
    core.delete_namespaced_config_map("c", "default")
    core.create_namespaced_config_map("default", {"metadata": {"name": "e", "labels": {"page": "t"}}})
    second = core.list_namespaced_config_map("default", label_selector="page=t", limit=2,
                                             _continue=first.metadata._continue)
    assert names(second) == ["c", "d"] and second.metadata._continue is None
    assert second.metadata.resource_version == first.metadata.resource_version


def test_a_continue_token_expires_with_the_compaction_window(twin, core):
    for n in "abc":
        core.create_namespaced_config_map("default", {"metadata": {"name": n, "labels": {"page": "t"}}})
    first = core.list_namespaced_config_map("default", label_selector="page=t", limit=1)
    twin.clock.sleep(301)
    with pytest.raises(ApiException) as err:
        core.list_namespaced_config_map("default", label_selector="page=t", limit=1, _continue=first.metadata._continue)
    assert err.value.status == 410 and json.loads(err.value.body)["reason"] == "Expired"


def test_bookmarks_arrive_when_asked_for(twin, core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    url = (f"{twin.base_url}/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1&allowWatchBookmarks=true"
           "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
    with urllib.request.urlopen(url, timeout=10) as resp:
        events = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    # the initial events: "a" and the namespace's root-CA ConfigMap
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "BOOKMARK", "BOOKMARK"]
    assert events[2]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert events[3]["object"]["metadata"]["resourceVersion"] == core.list_namespaced_config_map(
        "default").metadata.resource_version
