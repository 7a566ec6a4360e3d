"""Pytest plugin objects that flip the twin's fault switches over HTTP (/twin/v1/faults) mid-run.

`FlipAfterStep`: right after the first step whose text starts with a prefix, so a scenario's
preconditions hold and only the behaviour under test meets the fault; the switches are put back
once the steps are done, before the compensations run (teardown is not what is under test).
`FlipBeforeTeardown`: once the steps are done, so the compensations meet the fault.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from ruamel.yaml import YAML


class FlipAfterStep:
    def __init__(self, step_prefix: str, switches: dict[str, Any]) -> None:
        self.step_prefix = step_prefix
        self.switches = switches
        self.previous: dict[str, Any] | None = None

    def pytest_bdd_after_step(self, request: pytest.FixtureRequest, feature: Any, scenario: Any, step: Any,
                              step_func: Any, step_func_args: Any) -> None:
        if self.previous is None and step.name.startswith(self.step_prefix):
            self.previous = {k: v for k, v in _faults(request).items() if k in self.switches}
            _faults(request, self.switches)

    def pytest_bdd_after_scenario(self, request: pytest.FixtureRequest, feature: Any, scenario: Any) -> None:
        if self.previous is not None:
            _faults(request, self.previous)
            self.previous = None


class FlipBeforeTeardown:
    def __init__(self, switches: dict[str, Any]) -> None:
        self.switches = switches

    def pytest_bdd_after_scenario(self, request: pytest.FixtureRequest, feature: Any, scenario: Any) -> None:
        _faults(request, self.switches)


def _faults(request: pytest.FixtureRequest, changes: dict[str, Any] | None = None) -> dict[str, Any]:
    """GET the twin's switches, or PATCH `changes` into them."""
    session = request.getfixturevalue("stepgraph_session")
    with open(session.kubeconfig, encoding="utf-8") as text:
        server = YAML(typ="safe", pure=True).load(text)["clusters"][0]["cluster"]["server"]
    body = json.dumps(changes).encode() if changes is not None else None
    call = urllib.request.Request(f"{server}/twin/v1/faults", data=body, method="PATCH" if body else "GET",
                                  headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(call, timeout=5) as answer:
        return json.loads(answer.read())["switches"]
