"""A pytest plugin object for catalog runs: the run's cleanup ledger (its last line) once it ended."""

from __future__ import annotations

import pytest

from stepgraph.dsl.runinfo import RUN_INFO


class CleanupRecorder:
    def __init__(self) -> None:
        self.summary = ""
        self.interrupted = False
        self.left: list[str] = []

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        info = config.stash.get(RUN_INFO, None)
        if info is not None and info.session is not None:
            self.summary, self.interrupted, self.left = info.cleanup.summary(), info.cleanup.interrupted, list(info.cleanup.left)
