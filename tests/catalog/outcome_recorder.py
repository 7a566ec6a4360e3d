"""A pytest plugin object for catalog runs: scenario id → outcome and failure text; the warnings."""

from __future__ import annotations

import warnings

import pytest

_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


class OutcomeRecorder:
    """Collects, per `@id:` tag, the worst outcome of setup/call/teardown and every failure text."""

    def __init__(self) -> None:
        self.results: dict[str, dict[str, str]] = {}
        self.exits: list[str] = []
        self.passed = 0  # tests whose call passed, as pytest's summary counts them
        self.warnings: list[str] = []  # category and message of every warning pytest recorded

    def pytest_warning_recorded(self, warning_message: warnings.WarningMessage) -> None:
        self.warnings.append(f"{warning_message.category.__name__}: {warning_message.message}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.passed += report.when == "call" and report.passed
        ids = [k.removeprefix("id:") for k in report.keywords if k.startswith("id:")]
        key = ids[0] if ids else report.nodeid
        if report.when != "call" and report.outcome == "passed":
            self.results.setdefault(key, {"outcome": "passed", "text": ""})
            return
        outcome = "error" if report.failed and report.when != "call" else report.outcome
        text = str(report.longrepr) if report.longrepr else ""
        previous = self.results.get(key)
        if previous is None or _RANK[outcome] >= _RANK[previous["outcome"]]:
            joined = "\n".join(filter(None, [previous["text"] if previous else "", text]))
            self.results[key] = {"outcome": outcome, "text": joined}

    def pytest_internalerror(self, excrepr: object) -> None:
        self.exits.append(str(excrepr))
