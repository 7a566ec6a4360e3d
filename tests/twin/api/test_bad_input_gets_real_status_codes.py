"""Bad input → the status codes and reasons a real API server returns; state stays intact and the
server keeps answering.  Raw HTTP is used only where the official client cannot send the input."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from kubernetes.client.rest import ApiException


def raw(twin, method: str, path: str, body: bytes | None = None, ctype: str = "application/json") -> tuple[int, dict]:
    req = urllib.request.Request(twin.base_url + path, data=body, method=method, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


CM = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize("body,ctype", [
    (b'{"metadata": {"name": "x"', "application/json"),
    (b"\xff\xfe not json", "application/json"),
    (b"metadata: [unclosed", "application/yaml"),
    (b"   ", "application/json"),
    (b"[1, 2, 3]", "application/json"),
    (b'{"metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "application/json"),
    (b'{"metadata": {"name": "deep"}, "data": ' + b'{"a": ' * 500 + b"1" + b"}" * 501, "application/json"),
])
def test_malformed_bodies_are_400_bad_request(twin, body, ctype):
    code, status = raw(twin, "POST", CM, body, ctype)
    assert code == 400 and status["kind"] == "Status" and status["reason"] == "BadRequest"


def test_a_body_nested_thousands_deep_is_refused_before_it_is_parsed(twin):
    # Parsed, it would take the parser's recursion to Python's limit, where a garbage collection
    # running finalizers has no stack left to report what they raise (a test failing elsewhere).
    body = b'{"metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    code, status = raw(twin, "POST", CM, body, "application/json")
    assert code == 400 and status["message"] == "the object is nested deeper than 100 levels"
    # The depth is told from the text the parser reads: in UTF-16 (which the JSON reader takes too)
    # an escaped quote's bytes must not hide the nesting after it.
    utf16 = ('{"a": "\\"", "b": ' + "[" * 3000 + "]" * 3000 + ', "c": "x"}').encode("utf-16-le")
    code, status = raw(twin, "POST", CM, utf16, "application/json")
    assert code == 400 and status["message"] == "the object is nested deeper than 100 levels"
    code, status = raw(twin, "POST", CM, b'{"metadata": {"name": "brackets"}, "data": {"a": "' + b"[" * 300 + b'"}}',
                       "application/json")
    assert code == 201  # brackets in a string are not nesting


def test_the_depth_limit_counts_the_values_inside_the_innermost_container(twin):
    def chain(containers: int) -> bytes:  # every container inside the one before, a number in the last
        return b'{"a": ' * containers + b"1" + b"}" * containers

    code, status = raw(twin, "POST", CM, chain(100), "application/json")
    assert code == 400 and status["message"] == "the object is nested deeper than 100 levels"
    code, status = raw(twin, "POST", CM, chain(99), "application/json")
    assert status.get("message") != "the object is nested deeper than 100 levels", (code, status)


def test_yaml_bodies_are_accepted(twin, core):
    code, _ = raw(twin, "POST", CM, b"metadata:\n  name: from-yaml\ndata:\n  a: '1'\n", "application/yaml")
    assert code == 201 and core.read_namespaced_config_map("from-yaml", "default").data == {"a": "1"}


def test_a_kind_that_does_not_fit_the_endpoint_is_400(twin):
    code, status = raw(twin, "POST", CM, json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}).encode())
    assert code == 400 and "cannot be handled as a ConfigMap" in status["message"]
    code, status = raw(twin, "POST", CM, json.dumps({"apiVersion": "apps/v1", "kind": "ConfigMap",
                                                     "metadata": {"name": "x"}}).encode())
    assert code == 400 and "does not match the expected API version" in status["message"]


@pytest.mark.parametrize("name", ["Upper", "under_score", "-lead", "a" * 254, "trail."])
def test_names_that_are_not_dns_1123_are_422(core, name):
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", {"metadata": {"name": name}})
    body = json.loads(err.value.body)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.name"


def test_namespace_names_must_be_dns_labels(core):
    with pytest.raises(ApiException) as err:
        core.create_namespace({"metadata": {"name": "has.dot"}})
    assert err.value.status == 422 and "RFC 1123 label" in json.loads(err.value.body)["message"]


def test_oversize_body_is_413_and_stores_nothing(twin, core):
    big = json.dumps({"metadata": {"name": "big"}, "data": {"blob": "x" * (3 * 1024 * 1024 + 10)}}).encode()
    code, status = raw(twin, "POST", CM, big)
    assert code == 413 and status["reason"] == "RequestEntityTooLarge"
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["kube-root-ca.crt"]


def test_unknown_resources_are_404_and_unsupported_verbs_405(twin):
    assert raw(twin, "GET", "/api/v1/namespaces/default/widgets")[0] == 404
    assert raw(twin, "GET", "/apis/example.com/v1/things")[0] == 404
    assert raw(twin, "GET", "/nonsense")[0] == 404
    code, status = raw(twin, "PUT", CM, b"{}")  # update on a collection
    assert code == 405 and status["reason"] == "MethodNotAllowed"
    code, status = raw(twin, "POST", "/api/v1/namespaces/default/configmaps/x/status", b"{}")
    assert code == 404  # configmaps have no status subresource


def test_exec_without_a_websocket_upgrade_is_400(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("p"))
    twin.clock.sleep(3)
    code, _ = raw(twin, "POST", "/api/v1/namespaces/default/pods/p/exec?command=true", b"")
    assert code == 400


def test_server_survives_a_burst_of_bad_requests_and_state_is_intact(twin, core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "keep"}, "data": {"v": "1"}})
    rv = core.read_namespaced_config_map("keep", "default").metadata.resource_version
    for body in (b"{", b"null", b'{"metadata": 5}', b'{"metadata": {"name": "keep", "resourceVersion": "1"}}'):
        for method in ("POST", "PUT", "PATCH"):
            path = CM if method == "POST" else CM + "/keep"
            ctype = "application/merge-patch+json" if method == "PATCH" else "application/json"
            code, status = raw(twin, method, path, body, ctype)
            assert 400 <= code < 500 and status["kind"] == "Status", (method, body, code, status)
    kept = core.read_namespaced_config_map("keep", "default")
    assert kept.data == {"v": "1"} and kept.metadata.resource_version == rv


def test_openapi_type_error_is_422_with_the_field_path(twin, make_pod):
    body = make_pod("p")  # the official client refuses to send this, so raw HTTP
    body["spec"]["containers"][0]["ports"] = [{"containerPort": "eighty"}]
    code, status = raw(twin, "POST", "/api/v1/namespaces/default/pods", json.dumps(body).encode())
    assert code == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "spec.containers[0].ports[0].containerPort"


def test_missing_required_field_is_422(twin):
    code, status = raw(twin, "POST", "/api/v1/namespaces/default/pods",
                       json.dumps({"metadata": {"name": "p"}, "spec": {}}).encode())
    assert code == 422 and {"field": "spec.containers", "reason": "FieldValueRequired", "message": "Required value"} \
        in status["details"]["causes"]


def test_unknown_fields_warn_by_default_and_fail_when_strict(twin):
    body = json.dumps({"metadata": {"name": "c"}, "bogus": 1}).encode()
    req = urllib.request.Request(twin.base_url + CM, data=body, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 201 and 'unknown field \\"bogus\\"' in resp.headers["Warning"]
    code, status = raw(twin, "POST", CM + "?fieldValidation=Strict",
                       json.dumps({"metadata": {"name": "d"}, "bogus": 1}).encode())
    assert code == 400 and 'unknown field "bogus"' in status["message"]


def test_a_yaml_alias_bomb_is_refused_quickly(twin):
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    bomb = ("metadata: {name: boom}\ndata:\n" + "\n".join("  " + line for line in lines) + "\n").encode()
    code, status = raw(twin, "POST", CM, bomb, "application/yaml")
    assert code == 400 and "excessive aliasing" in status["message"]
