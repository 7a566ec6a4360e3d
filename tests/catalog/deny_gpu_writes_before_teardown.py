"""A pytest plugin for one test: once a scenario's steps are done, and before its compensations run,
flip the twin's `nvml_no_permission` switch over HTTP (/twin/v1/faults), so restoring the GPUs fails."""

from __future__ import annotations

import json
import urllib.request

import pytest
from ruamel.yaml import YAML


def pytest_bdd_after_scenario(request: pytest.FixtureRequest, feature: object, scenario: object) -> None:
    session = request.getfixturevalue("stepgraph_session")
    with open(session.kubeconfig, encoding="utf-8") as text:
        kubeconfig = YAML(typ="safe").load(text)
    server = kubeconfig["clusters"][0]["cluster"]["server"]
    flip = urllib.request.Request(
        f"{server}/twin/v1/faults", data=json.dumps({"nvml_no_permission": True}).encode(), method="PATCH",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(flip, timeout=5).read()
