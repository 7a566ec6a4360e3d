"""Pod termination as a real kubelet and API server do it: DELETE marks the pod (deletionTimestamp
+ grace period) and returns it; the kubelet then stops each container (SIGTERM), waits on the
clock until it has exited or the grace period is over (SIGKILL), reports the final container
states and only then removes the pod. Meanwhile the pod is `Terminating` and its name is taken."""

from __future__ import annotations

import json
import math
import typing
import urllib.request

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from stepgraph.twin.workloads import Workload


def exists(core, name: str) -> bool:
    try:
        core.read_namespaced_pod(name, "default")
    except ApiException as exc:
        assert exc.status == 404
        return False
    return True


def pod_table_row(twin, name: str) -> list:
    """The cells `kubectl get pod` prints (the server-side Table)."""
    req = urllib.request.Request(f"{twin.base_url}/api/v1/namespaces/default/pods/{name}",
                                 headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())["rows"][0]["cells"]


def running_pod(twin, core, make_pod, name="p", grace=None, image="busybox:1.36", finalizers=None):
    body = make_pod(name)
    body["spec"]["containers"][0]["image"] = image
    if grace is not None:
        body["spec"]["terminationGracePeriodSeconds"] = grace
    if finalizers:
        body["metadata"]["finalizers"] = finalizers
    core.create_namespaced_pod("default", body)
    twin.clock.sleep(3)
    assert core.read_namespaced_pod(name, "default").status.phase == "Running"
    return body


def test_a_deleted_running_pod_is_terminating_and_its_name_stays_taken(twin, core, make_pod):
    body = running_pod(twin, core, make_pod)
    deleted = core.delete_namespaced_pod("p", "default")
    assert isinstance(deleted, client.V1Pod)
    assert deleted.metadata.deletion_timestamp is not None and deleted.metadata.deletion_grace_period_seconds == 30
    assert exists(core, "p")
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("default", body)
    assert err.value.status == 409 and json.loads(err.value.body)["reason"] == "AlreadyExists"
    assert pod_table_row(twin, "p")[2] == "Terminating"
    twin.clock.run_due()  # the built-in workload exits at once on SIGTERM
    assert not exists(core, "p")
    core.create_namespaced_pod("default", body)


def test_delete_options_grace_overrides_the_spec_and_can_only_shorten(twin, core, make_pod):
    running_pod(twin, core, make_pod, grace=60)
    pod = core.delete_namespaced_pod("p", "default", grace_period_seconds=20)
    assert pod.metadata.deletion_grace_period_seconds == 20
    pod = core.delete_namespaced_pod("p", "default", grace_period_seconds=40)
    assert pod.metadata.deletion_grace_period_seconds == 20


class ExitsWhenItWants(Workload):
    """Asks for as long as it likes after SIGTERM (`stop` → inf) and exits after `takes` seconds
    by itself; `takes=None` ignores SIGTERM, as `sleep` as PID 1 does."""

    told: typing.ClassVar[list[bool]] = []

    def __init__(self, takes: float | None) -> None:
        self.takes = takes

    def stop(self, ctx, graceful):
        ExitsWhenItWants.told.append(graceful)
        if graceful and self.takes is not None:
            ctx.clock.call_later(self.takes, lambda: ctx.exit(3))
        return math.inf


@pytest.fixture
def own_exit(twin):
    ExitsWhenItWants.told = []
    twin.workloads.register("own-exit", lambda pod, c: c["image"].startswith("own-exit"),
                            lambda pod, c: ExitsWhenItWants(None if c["image"] == "own-exit:never" else 7.0))


def final_states(twin) -> list[dict]:
    """The container states of every pod MODIFIED event from now on."""
    seen: list[dict] = []
    twin.store.subscribe("pods", lambda etype, pod: seen.extend(
        s["state"] for s in (pod.get("status") or {}).get("containerStatuses") or [] if etype == "MODIFIED"))
    return seen


def test_the_kubelet_waits_for_a_container_that_exits_by_itself(twin, core, make_pod, own_exit):
    running_pod(twin, core, make_pod, image="own-exit:7s")
    states = final_states(twin)
    core.delete_namespaced_pod("p", "default")
    twin.clock.sleep(6.9)
    assert exists(core, "p") and ExitsWhenItWants.told == [True]
    twin.clock.sleep(0.1)
    assert not exists(core, "p")
    assert states[-1]["terminated"]["exitCode"] == 3  # reported before the pod went


def test_a_container_ignoring_sigterm_is_killed_when_the_grace_period_ends(twin, core, make_pod, own_exit):
    running_pod(twin, core, make_pod, grace=12, image="own-exit:never")
    states = final_states(twin)
    core.delete_namespaced_pod("p", "default")
    twin.clock.sleep(11.9)
    assert exists(core, "p")
    twin.clock.sleep(0.1)
    assert not exists(core, "p")
    assert ExitsWhenItWants.told == [True, False]
    assert states[-1]["terminated"]["exitCode"] == 137


def test_grace_period_zero_removes_the_pod_before_delete_returns(twin, core, make_pod, own_exit):
    running_pod(twin, core, make_pod, image="own-exit:never")
    core.delete_namespaced_pod("p", "default", grace_period_seconds=0)
    assert not exists(core, "p") and ExitsWhenItWants.told == [False]


def test_a_finalizer_keeps_a_stopped_pod_until_it_is_removed(twin, core, make_pod):
    running_pod(twin, core, make_pod, finalizers=["example.com/hold"])
    core.delete_namespaced_pod("p", "default")
    twin.clock.sleep(1)
    held = core.read_namespaced_pod("p", "default")
    assert held.status.container_statuses[0].state.terminated is not None
    core.patch_namespaced_pod("p", "default", {"metadata": {"finalizers": None}})
    assert not exists(core, "p")


def test_an_unscheduled_pod_goes_at_once(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("p", node_selector={"no": "such-node"}))
    core.delete_namespaced_pod("p", "default")
    assert not exists(core, "p")
