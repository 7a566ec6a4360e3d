"""pytest plugin: pytest-bdd hooks → per-step records → results JSON, Cucumber JSON, JUnit XML.

Inert unless one of `--stepgraph-results`, `--stepgraph-cucumber`, `--stepgraph-junit` or
`--stepgraph-reports DIR` is given. The last writes all three into DIR and then the trace
(design documents from the ini option `stepgraph_trace_design`, else the DSL's
`stepgraph_design_doc`), with the previous run's results (moved to DIR/previous/) as baseline.
Under pytest-xdist each worker builds its records and attaches them, as JSON, to the teardown
report's user_properties; the controller (or the single process) collects them in
`pytest_runtest_logreport` — before junitxml sees that report — and writes the files at session end.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import time
from collections.abc import Callable, Generator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pytest_bdd.parser import Feature, Scenario, Step

from stepgraph.dsl.reports.paths import portable_value
from stepgraph.dsl.reports.records import StepRun, build_record, phase_of, scenario_run

RECORD_PROPERTY = "stepgraph.scenario-record"
# option → the module that writes it; imported only when used, so an inert plugin costs no start-up time
OPTIONS = {"stepgraph_results": "results", "stepgraph_cucumber": "cucumber", "stepgraph_junit": "junit"}


def _module(name: str) -> Any:
    return importlib.import_module(f"stepgraph.dsl.reports.{name}")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stepgraph-reports", "stepgraph step-level reports")
    group.addoption("--stepgraph-results", metavar="PATH", help="write the results JSON (stepgraph-results/1) here")
    group.addoption("--stepgraph-cucumber", metavar="PATH", help="write Cucumber JSON with step detail here")
    group.addoption("--stepgraph-junit", metavar="PATH", help="write JUnit XML with step detail here")
    group.addoption("--stepgraph-reports", metavar="DIR",
                    help="write results.json, cucumber.json, junit.xml and trace.{md,html,json} into DIR")
    parser.addini("stepgraph_trace_design", "design documents traced by --stepgraph-reports", type="paths", default=[])
    parser.addini("stepgraph_trace_expect", "expected outcomes (YAML) checked by --stepgraph-reports", type="paths", default=[])
    parser.addini("stepgraph_trace_lock", "review lock used by --stepgraph-reports", type="paths", default=[])


def pytest_configure(config: pytest.Config) -> None:
    outputs = {name: config.getoption(name) for name in OPTIONS}
    reports = config.getoption("stepgraph_reports")
    if reports:
        for name, default in zip(OPTIONS, _module("run_reports").FILES, strict=True):
            outputs[name] = outputs[name] or str(Path(reports) / default)
    for path in filter(None, outputs.values()):
        problem = _unwritable(Path(path))
        if problem:  # say so now, not after an hour of tests
            raise pytest.UsageError(f"{path}: cannot write the report: {problem} — choose a writable path")
    if any(outputs.values()):
        config.pluginmanager.register(RecordsPlugin(config, outputs, reports), "stepgraph-reports-records")


def _unwritable(path: Path) -> str | None:
    """Why a report could not be written at `path` (checked without creating anything), or None."""
    if path.is_dir():
        return "it is a folder"
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is not writable"
    return None


class RecordsPlugin:
    def __init__(self, config: pytest.Config, outputs: dict[str, str | None], reports: str | None = None) -> None:
        self.config = config
        self.outputs = outputs
        self.is_worker = hasattr(config, "workerinput")
        self.reports = Path(reports) if reports else None
        self.summary: list[str] = []  # the trace's own lines, shown in the terminal summary
        # The last run's results become the baseline (moved, never deleted, before this run writes).
        self.baseline = _module("run_reports").keep_previous(self.reports) if self.reports and not self.is_worker else None
        self.records: list[dict[str, Any]] = []
        self.collection_errors: list[dict[str, str]] = []
        self.started_at = datetime.now(UTC)
        self.started = time.perf_counter()

    # -- worker side (or the single process): watch the steps ---------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_bdd_before_step(self, request: pytest.FixtureRequest, feature: Feature, scenario: Scenario,
                               step: Step, step_func: Callable[..., object]) -> None:
        scenario_run(request.node).steps.append(StepRun("running", time.perf_counter()))

    @pytest.hookimpl(tryfirst=True)
    def pytest_bdd_after_step(self, request: pytest.FixtureRequest, **_: object) -> None:
        self._finish_step(request, "passed", None)

    @pytest.hookimpl(tryfirst=True)
    def pytest_bdd_step_error(self, request: pytest.FixtureRequest, exception: Exception, **_: object) -> None:
        self._finish_step(request, "failed", f"{type(exception).__name__}: {exception}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_bdd_step_func_lookup_error(self, request: pytest.FixtureRequest, step: Step, **_: object) -> None:
        message = f"undefined step: {step.keyword} {step.name}"
        scenario_run(request.node).steps.append(StepRun("undefined", time.perf_counter(), error=message))

    def _finish_step(self, request: pytest.FixtureRequest, status: str, error: str | None) -> None:
        current = scenario_run(request.node).steps[-1]
        current.status, current.error = status, error
        current.duration_s = time.perf_counter() - current.started

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        run = scenario_run(item)
        run.phases[report.when] = phase_of(report)
        if report.when == "teardown":
            record = build_record(item, run)
            if record is not None:
                report.user_properties.append((RECORD_PROPERTY, json.dumps(record)))
        return report

    # -- controller side (or the single process): collect and write ---------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker or report.when != "teardown":
            return
        kept = []
        for name, value in report.user_properties:
            if name == RECORD_PROPERTY:
                self.records.append(json.loads(str(value)))  # our own json.dumps text
            else:
                kept.append((name, value))
        report.user_properties[:] = kept

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # Under xdist every worker collects, so the same error can arrive once per worker.
        if not self.is_worker and report.failed and all(e["nodeid"] != report.nodeid for e in self.collection_errors):
            self.collection_errors.append({"nodeid": report.nodeid, "message": _last_error(report.longreprtext)})

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            return
        # the command line as typed, except that an absolute path inside the rootdir is named from it
        args = [portable_value(arg, self.config.rootpath) for arg in self.config.invocation_params.args]
        document = _module("results").assemble(
            self.records, started_at=self.started_at, duration_s=time.perf_counter() - self.started,
            args=args, collection_errors=self.collection_errors,
        )
        for option, module in OPTIONS.items():
            if self.outputs[option]:
                _module(module).write(document, self.outputs[option])
        if self.reports is not None:
            self._trace(session)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary:
            terminalreporter.write_sep("-", "stepgraph reports")
            for line in self.summary:
                terminalreporter.write_line(line)

    def _trace(self, session: pytest.Session) -> None:
        """Write DIR/trace.*; a trace problem (orphans, unmet expectations) fails an otherwise green run."""
        design = self.config.getini("stepgraph_trace_design") or _dsl_design_doc(self.config)
        if not design:
            lines = ["stepgraph trace: skipped — no design document (set ini stepgraph_trace_design)"]
            code = 0
        else:
            out, err = io.StringIO(), io.StringIO()
            expect = self.config.getini("stepgraph_trace_expect")
            lock = self.config.getini("stepgraph_trace_lock")
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = _module("run_reports").write_trace(
                    self.reports, design, baseline=self.baseline,
                    expect=expect[0] if expect else None, lock=lock[0] if lock else None,
                    base=self.config.rootpath)  # files named from the rootdir, like pytest names tests
            lines = (out.getvalue() + err.getvalue()).splitlines()
        self.summary = lines
        if code and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _dsl_design_doc(config: pytest.Config) -> list[Path]:
    """The DSL's own design-doc setting (ini `stepgraph_design_doc`), when its plugin is loaded."""
    try:
        doc = config.getini("stepgraph_design_doc")
    except ValueError:
        return []
    return [config.rootpath / doc] if doc else []


def _last_error(text: str) -> str:
    """The final `E   …` block of a pytest error text, on one line (the traceback above it is noise here)."""
    block: list[str] = []
    for line in text.splitlines():
        if line.startswith("E "):
            block.append(line[1:].strip())
        elif block and line.strip():
            block = []
    if block:
        return " ".join(block)
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""
