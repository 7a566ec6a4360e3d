"""Run held-out scenario files with pytest in this process → outcome and failure text per scenario id."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from frozen_heap import freeze_what_lives

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = Path(__file__).resolve().parent / "scenarios"

_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


@dataclass
class Recorder:
    """Per `@id:` marker: the worst outcome over setup/call/teardown, each failure text, and what was collected.

    A Scenario Outline row carries its own id (`QA-O1.2`) and the outline's (`QA-O1`); both are kept,
    so a row is looked up by its own id.
    """

    outcomes: dict[str, str] = field(default_factory=dict)
    texts: dict[str, list[str]] = field(default_factory=dict)
    collected: list[set[str]] = field(default_factory=list)

    @staticmethod
    def _ids(keywords: object) -> set[str]:
        return {k.removeprefix("id:") for k in keywords if isinstance(k, str) and k.startswith("id:")}

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = [self._ids(item.keywords) for item in session.items]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and report.passed:
            outcome = "passed"
        elif report.failed and report.when != "call":
            outcome = "error"
        else:
            outcome = report.outcome
        for key in self._ids(report.keywords):
            if _RANK[outcome] >= _RANK[self.outcomes.get(key, "passed")]:
                self.outcomes[key] = outcome
            if report.longrepr:
                self.texts.setdefault(key, []).append(str(report.longrepr))


def run_files(files: list[str], world: str, faults: dict | None = None, *extra: str) -> Recorder:
    """`pytest FILES` on the twin in `world` (with these fault switches on from the start)."""
    recorder = Recorder()
    args = [str(SCENARIOS / f) for f in files]
    args += ["--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), "-p", "no:cacheprovider", "-p", "no:terminal",
             "-o", f"stepgraph_paths={SCENARIOS}", "--target-option", f"world={world}"]
    if faults:
        args += ["--target-option", "faults=" + json.dumps(faults)]
    freeze_what_lives()
    pytest.main([*args, *extra], plugins=[recorder])
    return recorder
