"""A pytest plugin for catalog runs in a subprocess: scenario id → outcome and failure text, as JSON.

Loaded with `-p outcome_recorder` (its folder on PYTHONPATH); writes to $CATALOG_OUTCOMES.
"""

from __future__ import annotations

import json
import os

import pytest

_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
_results: dict[str, dict[str, str]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    ids = [k.removeprefix("id:") for k in report.keywords if k.startswith("id:")]
    key = ids[0] if ids else report.nodeid
    if report.when == "call" or report.outcome != "passed":
        outcome = "error" if report.failed and report.when != "call" else report.outcome
        text = str(report.longrepr) if report.longrepr else ""
        previous = _results.get(key)
        if previous is None or _RANK[outcome] >= _RANK[previous["outcome"]]:
            _results[key] = {"outcome": outcome, "text": text if previous is None else previous["text"] + "\n" + text}
    elif key not in _results:
        _results[key] = {"outcome": "passed", "text": ""}


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("CATALOG_OUTCOMES")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(_results, out)
