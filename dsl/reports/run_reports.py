"""A catalog run's reports folder → pytest options before the run, the trace after it.

The simplest wiring is the plugin option `--stepgraph-reports=DIR`, which does all of this inside
pytest. A command that drives pytest itself can instead call, in three lines:

    previous = run_reports.keep_previous(out)          # last run's results become the baseline
    code = pytest.main(args + run_reports.pytest_args(out))
    run_reports.write_trace(out, design=[...], baseline=previous)

Layout: DIR/results.json, DIR/cucumber.json, DIR/junit.xml, DIR/trace.{md,html,json},
DIR/previous/results.json (the run before, for the diff).
"""

from __future__ import annotations

import os
from pathlib import Path

from stepgraph.dsl.reports.cli import ReadAhead
from stepgraph.dsl.reports.cli import main as trace_main

FILES = ("results.json", "cucumber.json", "junit.xml")


def pytest_args(out: Path) -> list[str]:
    """Without the trace; `--stepgraph-reports=DIR` does all of this (and the trace) inside pytest."""
    return [f"--stepgraph-{name.split('.')[0]}={out / name}" for name in FILES]


def keep_previous(out: Path) -> Path | None:
    """Move the last run's results aside (DIR/previous/results.json) and return it, if there was one."""
    current = out / "results.json"
    if not current.is_file():
        return None
    previous = out / "previous" / "results.json"
    previous.parent.mkdir(parents=True, exist_ok=True)
    os.replace(current, previous)
    return previous


def prepare() -> None:
    """Compile now what reading results and writing the trace compile on first use (the results
    schema's validator, the trace's templates), for a caller that has time to spare before it
    writes them: `stepgraph run` while its worlds start."""
    from stepgraph.dsl.reports import render, results

    results.load_validator()
    render.load_templates()


def _trace_argv(out: Path, design: list[Path], baseline: Path | None, expect: Path | None, lock: Path | None,
                base: Path | None) -> list[str]:
    argv = ["--design", *map(str, design), "--results", str(out / "results.json"), "--out", str(out)]
    for option, value in (("--base", base), ("--baseline", baseline), ("--expect", expect), ("--lock", lock)):
        if value is not None:
            argv += [option, str(value)]
    return argv


def read_ahead(out: Path, design: list[Path], *, baseline: Path | None = None, expect: Path | None = None,
               lock: Path | None = None, base: Path | None = None) -> ReadAhead:
    """Read what `write_trace` with the same arguments will read besides the results (the
    documents, the lock, the expectations, the baseline), for a caller with time to spare before."""
    return ReadAhead(_trace_argv(out, design, baseline, expect, lock, base))


def write_trace(out: Path, design: list[Path], *, baseline: Path | None = None, expect: Path | None = None,
                lock: Path | None = None, base: Path | None = None, ahead: ReadAhead | None = None) -> int:
    """`stepgraph trace` over this run's results; returns its exit code (0, 1 or 2). The trace names
    files from `base` (the working folder if None); `ahead`: a `read_ahead` of the same arguments."""
    return trace_main(_trace_argv(out, design, baseline, expect, lock, base), ahead=ahead)
