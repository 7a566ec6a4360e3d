"""Client failures → one exception family with causes chained; the exec status channel → exit codes."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException

from stepgraph.steps._clients import (
    ApiError,
    Conflict,
    CredentialsError,
    ExecError,
    Forbidden,
    NotFound,
    _can_expire,
    api_client,
    exit_code_from_status,
    translated,
)


def _exc(status: int, reason: str, message: str) -> ApiException:
    exc = ApiException(status=status, reason=reason)
    exc.body = json.dumps({"kind": "Status", "reason": reason, "message": message, "code": status})
    return exc


@pytest.mark.parametrize(("status", "kind"), [(404, NotFound), (409, Conflict), (403, Forbidden), (500, ApiError)])
def test_status_codes_map_to_our_exceptions_with_the_cause_chained(status: int, kind: type) -> None:
    original = _exc(status, "Whatever", "pods is forbidden")
    with pytest.raises(kind, match=f"read pod x: {status} Whatever: pods is forbidden") as caught, translated("read pod x"):
        raise original
    assert caught.value.__cause__ is original


def test_a_refused_exec_handshake_is_read_back_into_its_status() -> None:
    status = json.dumps({"kind": "Status", "reason": "NotFound", "message": 'pods "p" not found', "code": 404})
    exc = ApiException(status=0, reason=f"Handshake status 404 Not Found -+-+- {{'server': 'x'}} -+-+- {status}")
    with pytest.raises(NotFound, match='pods "p" not found'), translated("exec"):
        raise exc


def test_connection_refused_names_the_api_server() -> None:
    with pytest.raises(ApiError.__mro__[1], match="cannot reach the API server"), translated("list pods"):
        raise ConnectionRefusedError(111, "Connection refused")


def test_missing_kubeconfig_is_a_credentials_error(tmp_path) -> None:
    with pytest.raises(CredentialsError, match="cannot load kubeconfig"):
        api_client(str(tmp_path / "nope"))


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('{"metadata":{},"status":"Success"}', 0),
        ('{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"137"}]}}', 137),
    ],
)
def test_status_channel_gives_the_exit_code(text: str, code: int) -> None:
    assert exit_code_from_status(text) == code


@pytest.mark.parametrize("text", ["", "not json", '{"status":"Failure","message":"container not running"}'])
def test_status_channel_without_an_exit_code_is_an_exec_error(text: str) -> None:
    with pytest.raises(ExecError):
        exit_code_from_status(text)


def _kubeconfig(tmp_path, user: dict) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}},
                     {"name": "other", "context": {"cluster": "k", "user": "v"}}],
        "users": [{"name": "u", "user": user},
                  {"name": "v", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "true"}}}],
    }))
    return str(path)


def test_a_token_that_cannot_expire_is_sent_without_reapplying_the_kubeconfig_on_every_request(tmp_path) -> None:
    api = api_client(_kubeconfig(tmp_path, {"token": "t0ken"}))
    assert api.configuration.refresh_api_key_hook is None
    assert api.configuration.auth_settings()["BearerToken"]["value"] == "Bearer t0ken"
    assert api.configuration.host == "https://127.0.0.1:1"


def test_credentials_that_may_expire_keep_the_clients_refresh_before_each_request(tmp_path) -> None:
    provider = {"auth-provider": {"name": "oidc", "config": {"id-token": "x", "client-id": "c", "idp-issuer-url": "https://i"}}}
    assert _can_expire(_kubeconfig(tmp_path, provider), None)
    assert _can_expire(_kubeconfig(tmp_path, {"token": "t"}), "other")  # the exec plugin's user
    assert not _can_expire(_kubeconfig(tmp_path, {"token": "t"}), None)
    assert _can_expire(str(tmp_path / "missing"), None)
