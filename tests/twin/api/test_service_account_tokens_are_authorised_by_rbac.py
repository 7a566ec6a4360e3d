"""Service-account tokens and RBAC: a pod's token (minted twin-side for its service-account
files, or by a TokenRequest) is that service account over HTTP, allowed only what its Roles and
ClusterRoles grant — the Power Agent chart's namespaced Role makes a cluster-wide pod list a real
403 — while the kubeconfig stays cluster admin. SelfSubjectAccessReviews (`kubectl auth can-i`)
ask the same RBAC."""

from __future__ import annotations

import json
import subprocess

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

NS = "dynamo-power-test"
# The rules of the Power Agent chart's namespaced Role (rbac.namespaceRestricted=true).
AGENT_RULES = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]


@pytest.fixture
def rbac(k8s):
    return client.RbacAuthorizationV1Api(k8s)


@pytest.fixture
def agent_pod(twin, core, rbac, make_pod):
    core.create_namespace({"metadata": {"name": NS}})
    core.create_namespaced_service_account(NS, {"metadata": {"name": "power-agent"}})
    rbac.create_namespaced_role(NS, {"metadata": {"name": "power-agent"}, "rules": AGENT_RULES})
    rbac.create_namespaced_role_binding(NS, {
        "metadata": {"name": "power-agent"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "power-agent"},
        "subjects": [{"kind": "ServiceAccount", "name": "power-agent", "namespace": NS}]})
    body = make_pod("agent")
    body["spec"]["serviceAccountName"] = "power-agent"
    return core.create_namespaced_pod(NS, body).to_dict()


def as_token(twin, token: str, scheme: str = "Bearer") -> client.ApiClient:
    config = client.Configuration()
    config.host = twin.base_url
    config.api_key = {"authorization": f"{scheme} {token}"}
    return client.ApiClient(config)


def raw(pod: dict) -> dict:
    """A V1Pod's to_dict() back into API field names, as far as the token minting needs them."""
    return {"metadata": {"name": pod["metadata"]["name"], "namespace": pod["metadata"]["namespace"],
                         "uid": pod["metadata"]["uid"]},
            "spec": {"serviceAccountName": pod["spec"]["service_account_name"]}}


def test_the_chart_role_allows_the_namespace_and_forbids_the_cluster(twin, agent_pod):
    with as_token(twin, twin.service_account_token(raw(agent_pod))) as api:
        agent = client.CoreV1Api(api)
        assert [p.metadata.name for p in agent.list_namespaced_pod(NS).items] == ["agent"]
        with pytest.raises(ApiException) as err:
            agent.list_pod_for_all_namespaces()
        assert err.value.status == 403
        assert json.loads(err.value.body)["message"] == (
            'pods is forbidden: User "system:serviceaccount:dynamo-power-test:power-agent" cannot list resource '
            '"pods" in API group "" at the cluster scope')
        with pytest.raises(ApiException) as err:
            agent.delete_namespaced_pod("agent", NS)
        assert err.value.status == 403


def test_the_in_cluster_configs_lower_case_scheme_is_the_same_service_account(twin, agent_pod):
    # load_incluster_config() sends "bearer <token>"; the scheme is case-insensitive
    with as_token(twin, twin.service_account_token(raw(agent_pod)), scheme="bearer") as api:
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(api).list_pod_for_all_namespaces()
        assert err.value.status == 403


def test_the_kubeconfig_keeps_full_rights(core, agent_pod):
    assert any(p.metadata.name == "agent" for p in core.list_pod_for_all_namespaces().items)


def test_a_cluster_role_binding_grants_every_namespace(twin, rbac, agent_pod):
    rbac.create_cluster_role({"metadata": {"name": "pod-reader"}, "rules": AGENT_RULES})
    rbac.create_cluster_role_binding({
        "metadata": {"name": "pod-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "power-agent", "namespace": NS}]})
    with as_token(twin, twin.service_account_token(raw(agent_pod))) as api:
        assert client.CoreV1Api(api).list_pod_for_all_namespaces().items


def test_a_token_request_mints_a_working_token_and_access_reviews_answer(twin, core, agent_pod):
    token = core.create_namespaced_service_account_token("power-agent", NS, {"spec": {}}).status.token
    with as_token(twin, token) as api:
        authz = client.AuthorizationV1Api(api)

        def can(verb, namespace=None):
            review = authz.create_self_subject_access_review({"spec": {"resourceAttributes": {
                "verb": verb, "resource": "pods", **({"namespace": namespace} if namespace else {})}}})
            return review.status.allowed
        assert (can("list", NS), can("list"), can("delete", NS)) == (True, False, False)


def test_a_token_dies_with_its_pod(twin, core, agent_pod):
    token = twin.service_account_token(raw(agent_pod))
    core.delete_namespaced_pod("agent", NS, grace_period_seconds=0)
    with as_token(twin, token) as api, pytest.raises(ApiException) as err:
        client.CoreV1Api(api).list_namespaced_pod(NS)
    assert err.value.status == 401


def test_kubectl_auth_can_i_is_answered(twin):
    """kubectl sends no bearer token over plain HTTP, so here it asks as the kubeconfig's admin."""
    answer = subprocess.run(["kubectl", "--kubeconfig", str(twin.kubeconfig_path), "auth", "can-i", "delete", "pods",
                             "--all-namespaces"], capture_output=True, text=True, timeout=60)
    assert (answer.stdout.strip(), answer.returncode) == ("yes", 0), answer.stderr


def test_the_bootstrap_objects_exist(core):
    svc = core.read_namespaced_service("kubernetes", "default")
    assert svc.spec.cluster_ip == "10.96.0.1" and svc.spec.ports[0].port == 443
    assert core.read_namespaced_service_account("default", "kube-system").metadata.name == "default"


def test_leases_are_served(k8s):
    coordination = client.CoordinationV1Api(k8s)
    coordination.create_namespaced_lease("default", {"metadata": {"name": "leader"}, "spec": {
        "holderIdentity": "me", "leaseDurationSeconds": 15}})
    assert coordination.read_namespaced_lease("leader", "default").spec.holder_identity == "me"
