"""Fixtures for the reports tests: the sample project, written out and run once per mode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from report_samples import OUTPUTS, SAMPLE_CONFTEST, SAMPLE_FEATURE, SAMPLE_MODES, SAMPLE_STEPS


def pytest_configure(config: pytest.Config) -> None:
    # `pytest_plugins` is only allowed in the root conftest; load pytester for these black-box runs.
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")


@pytest.fixture(scope="session")
def sample_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sample feature run once per mode (it is the slow part); tests read the files it wrote."""
    runs = {}
    for mode, extra in SAMPLE_MODES.items():
        folder = tmp_path_factory.mktemp(mode)
        (folder / "power.feature").write_text(SAMPLE_FEATURE)
        (folder / "test_power.py").write_text(SAMPLE_STEPS)
        (folder / "conftest.py").write_text(SAMPLE_CONFTEST)
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *OUTPUTS, *extra],
                              cwd=folder, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
        runs[mode] = folder
    return runs


@pytest.fixture
def sample_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".feature", power=SAMPLE_FEATURE)
    pytester.makepyfile(test_power=SAMPLE_STEPS)
    pytester.makeconftest(SAMPLE_CONFTEST)
    return pytester
