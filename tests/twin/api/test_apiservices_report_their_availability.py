"""`apiregistration.k8s.io/v1` APIServices: stored and validated as the aggregator does, local ones
Available at once, Service-backed ones reported unavailable (the twin proxies to no aggregated
server), printed with SERVICE / AVAILABLE columns."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException


@pytest.fixture
def registration(k8s):
    return client.ApiregistrationV1Api(k8s)


def wardle(name="v1alpha1.wardle.k8s.io") -> dict:
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
            "spec": {"group": "wardle.k8s.io", "version": "v1alpha1", "groupPriorityMinimum": 1000,
                     "versionPriority": 15, "insecureSkipTLSVerify": True,
                     "service": {"name": "api", "namespace": "wardle"}}}


def available(registration, name="v1alpha1.wardle.k8s.io"):
    [cond] = registration.read_api_service(name).status.conditions
    assert cond.type == "Available" and cond.last_transition_time is not None
    return cond.status, cond.reason, cond.message


def test_a_service_backed_apiservice_is_stored_and_unavailable_until_its_service_exists(twin, core, registration):
    created = registration.create_api_service(wardle())
    assert created.spec.group == "wardle.k8s.io" and created.spec.service.port == 443
    assert available(registration) == ("False", "ServiceNotFound", 'service/api in "wardle" is not present')
    core.create_namespace({"metadata": {"name": "wardle"}})
    core.create_namespaced_service("wardle", {"metadata": {"name": "api"}, "spec": {"ports": [{"port": 443}]}})
    assert available(registration) == ("False", "EndpointsNotFound",
                                       'cannot find endpoints for service/api in "wardle"')
    with pytest.raises(ApiException) as err:
        registration.create_api_service(wardle())
    assert err.value.status == 409 and err.value.body == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"apiservices.apiregistration'
        '.k8s.io \\"v1alpha1.wardle.k8s.io\\" already exists","reason":"AlreadyExists","details":{"name":'
        '"v1alpha1.wardle.k8s.io","group":"apiregistration.k8s.io","kind":"apiservices"},"code":409}\n')
    registration.delete_api_service("v1alpha1.wardle.k8s.io")
    assert [a.metadata.name for a in registration.list_api_service().items] == []


def test_a_local_apiservice_is_available_at_once(registration):
    body = wardle("v1.example.dev")
    body["spec"].update(group="example.dev", version="v1")
    del body["spec"]["service"], body["spec"]["insecureSkipTLSVerify"]
    registration.create_api_service(body)
    assert available(registration, "v1.example.dev") == ("True", "Local", "Local APIServices are always available")


def test_the_name_must_be_version_dot_group(registration):
    with pytest.raises(ApiException) as err:
        registration.create_api_service(wardle("wardle"))
    assert err.value.status == 422 and json.loads(err.value.body)["message"] == (
        'APIService.apiregistration.k8s.io "wardle" is invalid: metadata.name: Invalid value: "wardle": '
        'must be `spec.version+"."+spec.group`: "v1alpha1.wardle.k8s.io"')


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")
def test_kubectl_prints_service_and_availability(twin, registration):
    registration.create_api_service(wardle())
    out = subprocess.run(["kubectl", "--kubeconfig", str(twin.kubeconfig_path), "get", "apiservices"],
                         capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert out[0].split() == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    assert out[1].split()[:4] == ["v1alpha1.wardle.k8s.io", "wardle/api", "False", "(ServiceNotFound)"]
