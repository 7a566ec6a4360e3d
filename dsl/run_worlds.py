"""`stepgraph run --world A --world B …`: the same scenarios once per world → one results file, one trace.

A world is one target session (one twin, one clock), so each runs as its own pytest process, at
most `jobs` at a time. Each writes DIR/worlds/<world>/results.json and leaves its terminal output
in DIR/worlds/<world>/output.txt, which is printed, world by world, once all are done. Their
records are merged into DIR/results.json (and cucumber.json, junit.xml); the trace is written from
that one file, so it has one column per world and every declared expectation is checked against
the world it names. The last run's results become the baseline of the diff, as in a one-world run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from stepgraph.dsl.reports import cucumber, junit, results, run_reports


@dataclass(frozen=True)
class TraceSettings:
    """What the trace of a multi-world run reads (the reports plugin's ini options)."""

    design: list[Path]
    expect: Path | None = None
    lock: Path | None = None


@dataclass(frozen=True)
class WorldRun:
    world: str
    folder: Path

    @property
    def results(self) -> Path:
        return self.folder / "results.json"

    @property
    def output(self) -> Path:
        return self.folder / "output.txt"

    @property
    def returncode(self) -> int | None:
        """The world's pytest exit code, once its run has ended (None if it never did)."""
        path = self.folder / "exit-code"
        return int(path.read_text()) if path.is_file() else None

    def run_here(self, paths: Sequence[str], pytest_args: Sequence[str]) -> int:
        """pytest for this world in this process, everything it prints (fd 1 and 2) into the output file."""
        import pytest

        self.folder.mkdir(parents=True, exist_ok=True)
        for stale in (self.results, self.folder / "exit-code"):
            stale.unlink(missing_ok=True)  # a file from an earlier run must not pass for this one's
        saved = [os.dup(1), os.dup(2)]
        try:
            with self.output.open("wb") as sink:
                os.dup2(sink.fileno(), 1)
                os.dup2(sink.fileno(), 2)
                # This child imported stepgraph.dsl to get here, before pytest could rewrite its asserts.
                code = int(pytest.main([*paths, "--target-option", f"world={self.world}",
                                        f"--stepgraph-results={self.results}",
                                        "-W", "ignore::pytest.PytestAssertRewriteWarning", *pytest_args]))
                sys.stdout.flush()
                sys.stderr.flush()
        finally:
            for fd, copy in ((1, saved[0]), (2, saved[1])):
                os.dup2(copy, fd)
                os.close(copy)
        (self.folder / "exit-code").write_text(str(code))
        return code


def folder_name(world: str) -> str:
    """A world named by profile keeps its name; a world file is named by its stem."""
    return Path(world).stem if world.endswith((".yaml", ".yml")) else world


def run_worlds(worlds: Sequence[str], paths: Sequence[str], pytest_args: Sequence[str], out: Path,
               trace: TraceSettings, *, jobs: int = 2) -> int:
    """Run `paths` in every world, merge, report and trace; the run's exit code.

    The worlds are dealt round-robin to `jobs` child processes; each child runs its worlds one
    after the other, so the interpreter start and the imports are paid once per child, not once
    per world. On Ctrl-C every child gets the same SIGINT and runs its own teardown; the wait
    below outlives them, so an interrupted run leaves no twin or child behind.
    """
    started_at, started = datetime.now(UTC), time.perf_counter()
    baseline = run_reports.keep_previous(out)
    runs = [WorldRun(w, out / "worlds" / folder_name(w)) for w in worlds]
    groups = [runs[i::jobs] for i in range(min(jobs, len(runs)))]
    children = [subprocess.Popen([sys.executable, "-m", __name__, json.dumps(
        {"worlds": [[r.world, str(r.folder)] for r in group], "paths": list(paths), "pytest_args": list(pytest_args)})])
        for group in groups]
    try:
        for child in children:
            child.wait()
    except KeyboardInterrupt:
        for child in children:
            child.wait()
        raise
    for run in runs:
        sys.stdout.write(f"\n{'=' * 30} world {run.world}: exit {run.returncode} {'=' * 30}\n")
        if run.output.is_file():
            sys.stdout.write(run.output.read_text(encoding="utf-8", errors="replace"))
    sys.stdout.flush()
    missing = [run for run in runs if not run.results.is_file()]
    if missing:
        names = ", ".join(run.world for run in missing)
        print(f"stepgraph run: world(s) {names} wrote no results — see their output above", file=sys.stderr)
        return missing[0].returncode or 1
    document = merge([results.load(run.results) for run in runs], started_at=started_at,
                     duration_s=time.perf_counter() - started, args=sys.argv[1:])
    results.write(document, out / "results.json")
    cucumber.write(document, out / "cucumber.json")
    junit.write(document, out / "junit.xml")
    code = run_reports.write_trace(out, trace.design, baseline=baseline, expect=trace.expect, lock=trace.lock) \
        if trace.design else 0
    failed = [run.returncode for run in runs if run.returncode]
    return failed[0] if failed else code


def _child(spec: dict) -> int:
    """One child process: its share of the worlds, one after the other."""
    codes = [WorldRun(world, Path(folder)).run_here(spec["paths"], spec["pytest_args"]) for world, folder in spec["worlds"]]
    return next((c for c in codes if c), 0)


def merge(documents: list[dict], *, started_at: datetime, duration_s: float, args: list[str]) -> dict:
    """Several results documents → one, every record kept (each names its own target and world)."""
    records = [record for doc in documents for record in doc["scenarios"]]
    errors = [error for doc in documents for error in doc["run"].get("collection_errors", [])]
    return results.assemble(records, started_at=started_at, duration_s=duration_s, args=args, collection_errors=errors)


if __name__ == "__main__":
    sys.exit(_child(json.loads(sys.argv[1])))
