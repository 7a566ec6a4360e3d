"""Deletion: finalizers hold objects, pods get SIGTERM and their grace period, namespaces cascade."""

from __future__ import annotations

import typing

import pytest
from kubernetes.client.rest import ApiException

from stepgraph.twin.workloads import Workload


def gone(read, *args) -> bool:
    try:
        read(*args)
    except ApiException as exc:
        return exc.status == 404
    return False


def test_finalizers_hold_an_object_until_they_are_removed(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "f", "finalizers": ["example.com/hold"]}})
    core.delete_namespaced_config_map("f", "default")
    held = core.read_namespaced_config_map("f", "default")
    assert held.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as err:  # no new finalizers once deleting
        core.patch_namespaced_config_map("f", "default", {"metadata": {"finalizers": ["example.com/hold", "x/y"]}},
                                         _content_type="application/merge-patch+json")
    assert err.value.status == 422
    core.patch_namespaced_config_map("f", "default", {"metadata": {"finalizers": None}})
    assert gone(core.read_namespaced_config_map, "f", "default")


class SlowToStop(Workload):
    """Takes `needs` seconds to exit after SIGTERM; records what it was told."""

    calls: typing.ClassVar[list[tuple[str, bool]]] = []

    def __init__(self, needs: float) -> None:
        self.needs = needs

    def stop(self, ctx, graceful):
        SlowToStop.calls.append((ctx.pod_name, graceful))
        return self.needs


@pytest.fixture
def slow(twin):
    SlowToStop.calls = []
    twin.workloads.register("slow", lambda pod, c: c["image"].startswith("slow"),
                            lambda pod, c: SlowToStop(float(pod["metadata"]["annotations"]["needs"])))


def slow_pod(make_pod, name, needs, grace=30):
    body = make_pod(name, annotations={"needs": str(needs)}, command=["python3", "-c", "import torch; torch.cuda.init()"], gpus=1)
    body["spec"]["containers"][0]["image"] = "slow:1"
    body["spec"]["terminationGracePeriodSeconds"] = grace
    return body


def test_pod_deletion_sends_sigterm_and_waits_for_the_workload(twin, core, make_pod, slow):
    core.create_namespaced_pod("default", slow_pod(make_pod, "p", needs=5))
    twin.clock.sleep(3)
    uid = core.read_namespaced_pod("p", "default").metadata.uid
    assert twin.host.pids_of_pod(uid)
    core.delete_namespaced_pod("p", "default")
    assert SlowToStop.calls == []  # the kubelet acts on its next sync, after DELETE returned
    twin.clock.run_due()
    assert SlowToStop.calls == [("p", True)]
    terminating = core.read_namespaced_pod("p", "default")
    assert terminating.metadata.deletion_timestamp is not None and terminating.metadata.deletion_grace_period_seconds == 30
    twin.clock.sleep(4.9)
    assert not gone(core.read_namespaced_pod, "p", "default")
    twin.clock.sleep(0.1)
    assert gone(core.read_namespaced_pod, "p", "default")
    assert twin.host.pids_of_pod(uid) == [] and twin.node.allocator.claimed(uid) == ()


def test_grace_period_caps_a_slow_shutdown(twin, core, make_pod, slow):
    core.create_namespaced_pod("default", slow_pod(make_pod, "p", needs=100, grace=10))
    twin.clock.sleep(3)
    core.delete_namespaced_pod("p", "default")
    twin.clock.sleep(10)
    assert gone(core.read_namespaced_pod, "p", "default")


def test_grace_period_zero_removes_at_once(twin, core, make_pod, slow):
    core.create_namespaced_pod("default", slow_pod(make_pod, "p", needs=100))
    twin.clock.sleep(3)
    core.delete_namespaced_pod("p", "default", grace_period_seconds=0)
    assert gone(core.read_namespaced_pod, "p", "default")
    assert SlowToStop.calls == [("p", False)]


def test_namespace_deletion_cascades_and_blocks_new_content(twin, core, make_pod, slow):
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_config_map("doomed", {"metadata": {"name": "c"}})
    core.create_namespaced_pod("doomed", slow_pod(make_pod, "p", needs=5))
    twin.clock.sleep(3)
    core.delete_namespace("doomed")
    ns = core.read_namespace("doomed")
    assert ns.status.phase == "Terminating"
    assert gone(core.read_namespaced_config_map, "c", "doomed")
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("doomed", {"metadata": {"name": "late"}})
    # The whole body as the real NamespaceLifecycle admission writes it: controllers look for the cause.
    assert err.value.status == 403 and err.value.body == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \\"late\\" is '
        'forbidden: unable to create new content in namespace doomed because it is being terminated",'
        '"reason":"Forbidden","details":{"name":"late","kind":"configmaps","causes":[{"reason":'
        '"NamespaceTerminating","message":"namespace doomed is being terminated","field":"metadata.namespace"}]},'
        '"code":403}\n')
    twin.clock.sleep(5)
    assert gone(core.read_namespace, "doomed")


def test_delete_precondition_on_uid_is_409(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map("c", "default", body={"preconditions": {"uid": "not-it"}})
    assert err.value.status == 409
    assert not gone(core.read_namespaced_config_map, "c", "default")


def test_deleting_a_namespace_whose_contents_go_at_once_answers_it(core):
    core.create_namespace({"metadata": {"name": "brief"}})
    core.create_namespaced_config_map("brief", {"metadata": {"name": "c"}})
    deleted = core.delete_namespace("brief")
    assert deleted["metadata"]["name"] == "brief"  # the typed client hands it over as a dict
    assert gone(core.read_namespace, "brief")
