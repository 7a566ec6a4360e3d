"""Services as the real server keeps them: defaulted fields and a `status`, a cluster IP that
may not change once set (422) but survives an update that leaves it out, and a DELETE that
answers the Service itself, which the typed client deserialises."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

SERVICE = {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}


def test_a_created_service_is_defaulted_and_has_a_status(core):
    svc = core.create_namespaced_service("default", SERVICE)
    assert svc.status is not None and svc.status.load_balancer is not None
    assert (svc.spec.type, svc.spec.session_affinity, svc.spec.internal_traffic_policy) == ("ClusterIP", "None", "Cluster")
    assert svc.spec.ip_families == ["IPv4"] and svc.spec.ip_family_policy == "SingleStack"
    assert svc.spec.cluster_ips == [svc.spec.cluster_ip] and svc.spec.ports[0].target_port == 80


def test_the_cluster_ip_may_not_change_once_set(core):
    ip = core.create_namespaced_service("default", SERVICE).spec.cluster_ip
    other = "10.96.0.99" if ip != "10.96.0.99" else "10.96.0.98"
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_service("web", "default", {"spec": {"clusterIP": other, "clusterIPs": [other]}})
    assert err.value.status == 422
    cause = json.loads(err.value.body)["details"]["causes"][0]
    assert cause["field"] == "spec.clusterIPs[0]" and "may not change once set" in cause["message"]
    replaced = core.replace_namespaced_service("web", "default", {**SERVICE, "metadata": {"name": "web"}})
    assert replaced.spec.cluster_ip == ip


def test_deleting_a_service_answers_the_service(core):
    core.create_namespaced_service("default", SERVICE)
    deleted = core.delete_namespaced_service("web", "default")
    assert isinstance(deleted, client.V1Service) and deleted.metadata.name == "web"
