"""Error bodies byte for byte as the real server writes them: Go's JSON encoding (no spaces,
`<>&` escaped, a trailing newline) and Status keys in its order — the official client's
`FailToCreateError` text embeds the body, and tests compare that text."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException


def failure(call, *args, **kwargs) -> ApiException:
    with pytest.raises(ApiException) as err:
        call(*args, **kwargs)
    return err.value


def test_already_exists_body_is_byte_for_byte_the_real_one(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    err = failure(core.create_namespaced_config_map, "default", {"metadata": {"name": "c"}})
    assert err.body == ('{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                        '"message":"configmaps \\"c\\" already exists","reason":"AlreadyExists",'
                        '"details":{"name":"c","kind":"configmaps"},"code":409}\n')


def test_html_characters_are_escaped_as_go_does(core):
    err = failure(core.create_namespaced_config_map, "default",
                  {"metadata": {"name": "c", "labels": {"a": "<b&c>"}}})
    assert '"Invalid value: \\"\\u003cb\\u0026c\\u003e\\"' in err.body and "<" not in err.body


def test_a_failed_json_patch_test_is_the_real_servers_422(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"k": "1"}})
    err = failure(core.patch_namespaced_config_map, "c", "default",
                  [{"op": "test", "path": "/data/k", "value": "2"}])
    assert err.status == 422
    assert json.loads(err.body) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                    "message": "the server rejected our request due to an error in our request",
                                    "reason": "Invalid", "code": 422}
