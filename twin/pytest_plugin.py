"""pytest fixtures for the twin: `twin` (a started Twin) and `k8s` (an ApiClient bound to it).

Configure per test with a marker: `@pytest.mark.twin(seed=3, node=NodeConfig(cdi_mode=False))`;
any keyword `Twin(...)` takes is accepted.  Load with `-p stepgraph.twin.pytest_plugin` or import
the fixtures into a conftest.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from . import Twin


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "twin(**kwargs): keyword arguments for the `twin` fixture's Twin(...)")


@pytest.fixture
def twin(request: pytest.FixtureRequest) -> Iterator[Twin]:
    marker = request.node.get_closest_marker("twin")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
    with Twin(**kwargs) as t:
        yield t


@pytest.fixture
def k8s(twin: Twin) -> Iterator[Any]:
    client = twin.api_client()
    try:
        yield client
    finally:
        client.close()
