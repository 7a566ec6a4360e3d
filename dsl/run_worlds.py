"""`stepgraph run --world A --world B …`: the same scenarios once per world → one results file, one trace.

A world is one target session (one twin, one clock), so each runs as its own pytest process, at
most `jobs` at a time: one child imports pytest, the plugins, the step libraries and what the
target needs once, then forks a process per world, which starts with all of it loaded. Each
writes DIR/worlds/<world>/results.json and leaves its terminal output in
DIR/worlds/<world>/output.txt, which is printed, world by world, once all are done. Their records
are merged into DIR/results.json (and cucumber.json, junit.xml); the trace is written from that
one file, so it has one column per world and every declared expectation is checked against the
world it names. The last run's results become the baseline of the diff, as in a one-world run.
"""

from __future__ import annotations

import gc
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

from .interrupts import handle_unless_ignored

#: What interrupts a run: Ctrl-C, and SIGTERM (a CI job cancelled, `kill`), which every process of
#: the run takes as a Ctrl-C.
_STOP = {signal.SIGINT, signal.SIGTERM}

# The reports (merging, the trace's templates) are imported by `run_worlds` once the worlds are
# under way: the process serving them, forked before then, needs only the design-doc parser, which
# every world's run reads its requirement ids with (its preload imports that one).


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
        return code

    def record_exit(self, code: int) -> None:
        """The world's exit code, for the first process to report: also when its run never began."""
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "exit-code").write_text(str(code))


def folder_name(world: str) -> str:
    """A world named by profile keeps its name; a world file is named by its stem."""
    return Path(world).stem if world.endswith((".yaml", ".yml")) else world


def run_worlds(worlds: Sequence[str], paths: Sequence[str], pytest_args: Sequence[str], out: Path,
               trace: TraceSettings, *, jobs: int = 2) -> int:
    """Run `paths` in every world, merge, report and trace; the run's exit code.

    One child process serves the worlds (`_serve`): it imports once, then forks a process per
    world, at most `jobs` at a time, the next as soon as one ends. On Ctrl-C every process gets
    the same SIGINT (on a cancel, the same SIGTERM): the worlds running run their own teardown, no
    further world starts, and the waits below outlive them, so an interrupted run leaves no twin
    or child behind and still prints what each world undid.
    """
    # A caller that leaves SIGTERM to the system (a script) would die of it here, the worlds' output
    # unprinted: meanwhile it raises KeyboardInterrupt, as Ctrl-C does.
    terminate = signal.getsignal(signal.SIGTERM)
    takes_term = terminate is signal.SIG_DFL and threading.current_thread() is threading.main_thread()
    if takes_term:
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return _run_worlds(worlds, paths, pytest_args, out, trace, jobs)
    finally:
        if takes_term:
            signal.signal(signal.SIGTERM, terminate)


def _run_worlds(worlds: Sequence[str], paths: Sequence[str], pytest_args: Sequence[str], out: Path,
                trace: TraceSettings, jobs: int) -> int:
    started_at, started = datetime.now(UTC), time.perf_counter()
    runs = [WorldRun(w, out / "worlds" / folder_name(w)) for w in worlds]
    for run in runs:  # a file from an earlier run must not pass for this one's, even if a world never starts
        for stale in (run.results, run.output, run.folder / "exit-code"):
            stale.unlink(missing_ok=True)
    server = _start_server({"worlds": [[r.world, str(r.folder)] for r in start_order(runs, out / "results.json")],
                            "paths": list(paths), "pytest_args": list(pytest_args), "jobs": jobs})
    interrupted = False
    baseline: Path | None = None
    ahead = None
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP)  # held back by _start_server
        # While the server imports what the worlds need (on one core), this process loads and
        # compiles what it will need to merge and report, and reads what the trace reads besides
        # this run's results (documents, lock, expectations, baseline), instead of after the last world.
        from stepgraph.dsl.reports import cucumber, junit, results, run_reports

        baseline = run_reports.keep_previous(out)
        run_reports.prepare()
        ahead = run_reports.read_ahead(out, trace.design, baseline=baseline, expect=trace.expect,
                                       lock=trace.lock) if trace.design else None
        server.wait()
    except KeyboardInterrupt:
        interrupted = True
        server.wait()
    for run in runs:
        code = run.returncode
        ended = (f"exit {code}" if code is not None else
                 "ended without recording an exit code (killed?)" if run.output.is_file() else "not started")
        sys.stdout.write(f"\n{'=' * 30} world {run.world}: {ended} {'=' * 30}\n")
        if run.output.is_file():
            sys.stdout.write(run.output.read_text(encoding="utf-8", errors="replace"))
    sys.stdout.flush()
    if interrupted:
        # Each world's own last lines (above) say what its teardown undid; nothing is merged.
        print("stepgraph run: interrupted — no merged results or trace written", file=sys.stderr)
        return 2
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
    code = run_reports.write_trace(out, trace.design, baseline=baseline, expect=trace.expect, lock=trace.lock,
                                   ahead=ahead) if trace.design else 0
    failed = [run.returncode for run in runs if run.returncode]
    return failed[0] if failed else code


def start_order(runs: Sequence[WorldRun], last_results: Path) -> list[WorldRun]:
    """The worlds longest first, by how long each one's scenarios took in the last run (its
    results file in the reports folder), so that the last world to start is a short one and the
    cores stay busy to the end; worlds the last run did not have first, then the rest as given.
    Only the order the worlds start in: output, results and trace keep the order given."""
    try:
        records = json.loads(last_results.read_text(encoding="utf-8"))["scenarios"]
        took: dict[str, float] = {}
        for record in records:
            took[str(record["world"])] = took.get(str(record["world"]), 0.0) + float(record.get("duration_s") or 0.0)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return list(runs)  # no last run (or not a results file): as given; the next run has one
    return sorted(runs, key=lambda run: -took.get(folder_name(run.world), float("inf")))


class _Forked:
    """The server forked from this process: waited for like a Popen."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def wait(self) -> int:
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])


def _start_server(spec: dict) -> subprocess.Popen | _Forked:
    """The server: forked from this process when it is the `stepgraph` command itself (one thread,
    no pytest loaded), so it starts with the language already imported (0.3 s less before the first
    world), and returning with SIGINT and SIGTERM blocked here (the caller unblocks them); from any
    other process (a test calling the CLI in-process), whose fork would copy its other threads'
    locks, pytest's capture of the standard streams and its import hooks, a fresh interpreter
    (`python -m` this module)."""
    if threading.active_count() > 1 or "_pytest" in sys.modules:
        return subprocess.Popen([sys.executable, "-m", __name__, json.dumps(spec)])
    sys.stdout.flush()
    sys.stderr.flush()
    # Held back in both processes: the server unblocks it once it has its own handler, this one
    # inside the caller's try, so a Ctrl-C during the fork is an interrupt like any later one.
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP)
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP)
        raise
    if pid == 0:
        code = 1
        try:
            code = _serve(spec)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)  # not this process's remaining work (the merge, its exit handlers)
    return _Forked(pid)


def _serve(spec: dict) -> int:
    """The one child: import what every world needs, then a forked process per world, at most
    `jobs` at a time; the first non-zero exit code of the worlds (0 if none)."""
    paths, pytest_args = spec["paths"], spec["pytest_args"]
    interrupted = []
    # Ctrl-C reaches every process of the run: the worlds running stop on their own; this one
    # only stops starting more and waits for them. A run started with SIGINT ignored (a shell's
    # background job) keeps ignoring it in every process, as its first process does.
    for signum in _STOP:
        handle_unless_ignored(signum, lambda *_: interrupted.append(True))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP)  # blocked by a parent that forked this one
    _preload(pytest_args)
    # Everything imported so far lives as long as the processes do: frozen, it is never traversed
    # again by a collection, here or in the forked worlds (each of which collects at its end).
    gc.collect()
    gc.freeze()
    pending = deque(WorldRun(world, Path(folder)) for world, folder in spec["worlds"])
    running: dict[int, WorldRun] = {}
    codes: list[int] = []
    while running or (pending and not interrupted):
        while pending and len(running) < spec["jobs"] and not interrupted:
            run = pending.popleft()
            # A SIGINT or SIGTERM between the fork and the world's own handler would be lost on the world:
            # held back until the child has set it (the parent's too, so none is dropped).
            signal.pthread_sigmask(signal.SIG_BLOCK, _STOP)
            try:
                pid = os.fork()
                if pid == 0:
                    _world_process(run, paths, pytest_args)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP)
            running[pid] = run
        pid, status = os.wait()
        running.pop(pid)
        codes.append(os.waitstatus_to_exitcode(status))
    return next((c for c in codes if c), 2 if interrupted else 0)


def _world_process(run: WorldRun, paths: Sequence[str], pytest_args: Sequence[str]) -> NoReturn:
    """A forked world: its pytest run, then exit at once. Its reports are written and closed and
    its twin stopped when pytest returns; what the interpreter would do next (unwinding every
    module and a last collection of all the memory it shares with its parent) only costs time."""
    code = 1
    try:
        # A Ctrl-C held back since the fork arrives as soon as it is unblocked: inside the try.
        for signum in _STOP:
            handle_unless_ignored(signum, signal.default_int_handler)  # either raises KeyboardInterrupt
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP)
        code = run.run_here(paths, pytest_args)
    except KeyboardInterrupt:  # before pytest's session began (pytest itself handles it after)
        print(f"stepgraph run: world {run.world}: interrupted before its run began", file=sys.stderr)
        code = 2
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            run.record_exit(code)
        except OSError as error:
            print(f"stepgraph run: world {run.world}: could not record its exit code {code}: {error}", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _preload(pytest_args: Sequence[str]) -> None:
    """Import pytest, its plugins, the step libraries and what the target will need (its
    `preload()`, if it has one). An import that fails here is left to fail again in each world's
    run, which reports it as that run's error."""
    from importlib.metadata import entry_points

    import pytest  # noqa: F401

    from .registry import REGISTRY, StepDeclarationError
    from .target import TargetConfigError, default_target_name, load_target

    # What each world's pytest imports as it configures a run: its built-in plugins (a config
    # made here imports them all), pdb (for its debugging plugin), and of ours the YAML scenario
    # loader and the design-doc parser that reads the requirement ids.
    try:
        from _pytest.config import get_config

        get_config()
        import pdb  # noqa: F401

        from .load_yaml import load_yaml  # noqa: F401
        from .reports import design  # noqa: F401
    except Exception:
        pass
    for ep in entry_points(group="pytest11"):
        try:
            ep.load()
        except Exception:
            pass
    try:
        REGISTRY.load_entry_points()
        REGISTRY.import_waiting()
        target = load_target(_target_name(pytest_args) or default_target_name())
        preload = getattr(target, "preload", None)
        if callable(preload):
            preload()
    except (StepDeclarationError, TargetConfigError, ImportError):
        pass


def _target_name(pytest_args: Sequence[str]) -> str | None:
    """The `--target NAME` (or `--target=NAME`) among the pytest arguments, the last one winning."""
    name = None
    for i, arg in enumerate(pytest_args):
        if arg == "--target" and i + 1 < len(pytest_args):
            name = pytest_args[i + 1]
        elif (m := re.fullmatch(r"--target=(.+)", arg)) is not None:
            name = m.group(1)
    return name


def merge(documents: list[dict], *, started_at: datetime, duration_s: float, args: list[str]) -> dict:
    """Several results documents → one, every record kept (each names its own target and world)."""
    from stepgraph.dsl.reports import results

    records = [record for doc in documents for record in doc["scenarios"]]
    errors = [error for doc in documents for error in doc["run"].get("collection_errors", [])]
    return results.assemble(records, started_at=started_at, duration_s=duration_s, args=args, collection_errors=errors)


if __name__ == "__main__":
    sys.exit(_serve(json.loads(sys.argv[1])))
