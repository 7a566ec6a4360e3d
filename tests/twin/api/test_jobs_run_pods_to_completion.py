"""batch/v1 Jobs: pods from the template (with the generated selector's labels), `completions`
successes → Complete, more than `backoffLimit` failures → Failed; the template must not restart."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException


@pytest.fixture
def batch(k8s):
    return client.BatchV1Api(k8s)


def job(name="j", exit_code=0, completions=1, backoff=6, restart="Never") -> dict:
    return {"metadata": {"name": name}, "spec": {"completions": completions, "backoffLimit": backoff, "template": {
        "metadata": {"annotations": {"twin.stepgraph.dev/exit-after": "5", "twin.stepgraph.dev/exit-code": str(exit_code)}},
        "spec": {"restartPolicy": restart, "containers": [{"name": "work", "image": "busybox"}]}}}}


def conditions(batch, name="j") -> dict:
    return {c.type: c.status for c in batch.read_namespaced_job(name, "default").status.conditions or []}


def test_a_job_runs_its_pods_and_completes(twin, core, batch):
    created = batch.create_namespaced_job("default", job(completions=2))
    uid = created.metadata.uid
    assert created.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    assert created.spec.parallelism == 1 and created.spec.completion_mode == "NonIndexed"
    [pod] = core.list_namespaced_pod("default", label_selector=f"batch.kubernetes.io/controller-uid={uid}").items
    assert pod.metadata.labels["job-name"] == "j" and pod.metadata.owner_references[0].kind == "Job"
    assert batch.read_namespaced_job("j", "default").status.active == 1
    twin.clock.sleep(20)
    status = batch.read_namespaced_job("j", "default").status
    assert status.succeeded == 2 and not status.active and status.completion_time is not None
    assert conditions(batch) == {"SuccessCriteriaMet": "True", "Complete": "True"}


def test_a_job_fails_after_its_backoff_limit(twin, batch):
    batch.create_namespaced_job("default", job(exit_code=1, backoff=1))
    twin.clock.sleep(30)
    status = batch.read_namespaced_job("j", "default").status
    assert status.failed == 2 and conditions(batch) == {"FailureTarget": "True", "Failed": "True"}
    assert [c.reason for c in status.conditions] == ["BackoffLimitExceeded", "BackoffLimitExceeded"]


def test_a_job_template_that_restarts_always_is_refused(batch):
    with pytest.raises(ApiException) as err:
        batch.create_namespaced_job("default", job(restart="Always"))
    assert err.value.status == 422
    assert json.loads(err.value.body)["details"]["causes"][0]["field"] == "spec.template.spec.restartPolicy"


@pytest.mark.parametrize("image", ["", None])
def test_a_job_or_pod_without_an_image_is_refused(batch, core, image):
    body = job()
    container = body["spec"]["template"]["spec"]["containers"][0]
    if image is None:
        del container["image"]
    else:
        container["image"] = image
    with pytest.raises(ApiException) as err:
        batch.create_namespaced_job("default", body)
    assert err.value.status == 422
    assert json.loads(err.value.body)["message"] == \
        'Job.batch "j" is invalid: spec.template.spec.containers[0].image: Required value'
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {"containers": [container]}})
    assert json.loads(err.value.body)["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers[0].image"}]


def test_deleting_a_job_in_the_background_deletes_its_pods(twin, core, batch):
    uid = batch.create_namespaced_job("default", job()).metadata.uid
    batch.delete_namespaced_job("j", "default", propagation_policy="Background")
    twin.clock.sleep(1)
    assert core.list_namespaced_pod("default", label_selector=f"controller-uid={uid}").items == []
