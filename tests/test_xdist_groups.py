"""Under `-n 2 --dist loadgroup`, the tests sharing a module-scoped fixture run on one worker, so
the fixture is set up once, while both workers run tests."""

from __future__ import annotations

import pytest

CONFTEST = """
from pathlib import Path

import pytest
from xdist_groups import group_shared_results


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    group_shared_results(config, items, Path(__file__).parent)
"""
TESTS = """
import os
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _note(name):
    with open(HERE / name, "a") as log:
        log.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")


@pytest.fixture(scope="module")
def shared():
    _note("setups.txt")


@pytest.mark.parametrize("i", range(6))
def test_sharing(shared, i):
    _note("sharing.txt")


@pytest.mark.parametrize("i", range(6))
def test_alone(i):
    _note("alone.txt")
"""


def test_tests_sharing_a_fixture_run_on_one_worker_and_set_it_up_once(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_shared=TESTS)
    result = pytester.runpytest_inprocess("-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=12)
    workers = {name: (pytester.path / name).read_text().split() for name in ("setups.txt", "sharing.txt", "alone.txt")}
    assert len(workers["setups.txt"]) == 1, workers
    assert set(workers["sharing.txt"]) == set(workers["setups.txt"]), workers
    assert set(workers["sharing.txt"]) | set(workers["alone.txt"]) == {"gw0", "gw1"}, workers  # both workers ran tests
