"""The kubernetes client releases the project admits are the generation its steps are written for:
the steps call the request API of the client's 37 generation (ApiClient.param_serialize and
response_deserialize), which 36 and earlier do not have, so an install beside an older client
would fail in the middle of a run instead of at `pip install`."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> Requirement:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return next(r for r in map(Requirement, project["dependencies"]) if r.name == "kubernetes")


def test_the_declared_client_range_admits_only_the_generation_the_steps_use() -> None:
    from kubernetes.client import ApiClient

    declared = _declared().specifier
    assert hasattr(ApiClient, "param_serialize") and hasattr(ApiClient, "response_deserialize")
    assert declared.contains(version("kubernetes"))  # the client the tests run with is one it admits
    assert not declared.contains("36.99.99"), f"kubernetes{declared} admits a release without the API the steps call"
    assert declared.contains("37.0.0")
