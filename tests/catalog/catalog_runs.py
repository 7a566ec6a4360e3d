"""Run the scenario catalog (or part of it) on the twin with pytest → outcomes by scenario id.

Each run starts its own twin from a world, so fault switches and worlds never leak between runs.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from cleanup_recorder import CleanupRecorder
from frozen_heap import freeze_what_lives
from outcome_recorder import OutcomeRecorder

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "scenarios" / "multi_dgd"


@dataclass(frozen=True)
class CatalogRun:
    returncode: int
    outcomes: dict[str, dict[str, str]]
    output: str
    passed: int = 0  # tests passed, as pytest's summary counts them
    warnings: tuple[str, ...] = ()  # "Category: message" of every warning pytest recorded
    reports: Path | None = None  # the folder of the run's third-party reports, if it wrote them
    cleanup: str = ""  # the last line of the run's cleanup ledger, once a target session had started

    def ids(self, outcome: str) -> set[str]:
        return {i for i, r in self.outcomes.items() if r["outcome"] == outcome}


def run_catalog(*args: str, files: tuple[str, ...] = (), plugins: tuple[object, ...] = (),
                reports: Path | None = None) -> CatalogRun:
    """`pytest <files or the whole catalog> <args>` in this process, on the twin by default.

    In-process keeps a run to its own work (no interpreter start, no re-import); every run still
    starts its own twin from its world, so switches and state never leak between runs.
    """
    recorder, cleanup = OutcomeRecorder(), CleanupRecorder()
    paths = [str(CATALOG / f) for f in files] or [str(CATALOG)]
    freeze_what_lives()
    code = pytest.main(
        [*paths, "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), "-p", "no:cacheprovider", "-p", "no:terminal", *args],
        plugins=[recorder, cleanup, *plugins],
    )
    text = "\n".join(r["text"] for r in recorder.results.values() if r["text"]) + "".join(recorder.exits)
    return CatalogRun(int(code), dict(recorder.results), text, recorder.passed, tuple(recorder.warnings), reports,
                      cleanup.summary)


# The Path A runs name their world as the everyday command does, by `--world` and by the ini
# option `stepgraph_world` (test_expected_outcomes reads that they ran on Path A).
WORLD_ARGS = {
    "path-b-nvml": ["--target-option", "world=path-b"],
    "path-b-dcgm": ["--target-option", "world=path-b-dcgm"],
    "path-a-nvml": ["--world", "path-a"],
    "path-a-dcgm": ["-o", "stepgraph_world=path-a", "--target-option", "actuator=dcgm"],
}


# The API fault rate the Path B and Path A (NVML) world runs are made at: the catalog must pass
# there as without faults, and leave nothing behind.
API_FAULTS = "faults={api_fault_rate: 0.1, api_latency_seconds: 0.05}"
FAULTED = ("path-b-nvml", "path-a-nvml")

_FOLDERS: list[tempfile.TemporaryDirectory] = []  # removed when the process ends


@functools.cache
def world_runs() -> dict[str, CatalogRun]:
    """The whole catalog once per §1.1 combination, shared by every test module of this process.

    The default world's run also writes what tools reading pytest-bdd's view of a run read (Allure
    results, pytest-bdd's Cucumber JSON) into its `reports` folder, and is strict about
    ResourceWarning, for the tests of those tools.

    The Path B and Path A runs with NVML (`FAULTED`) are made at a 10 % API fault rate: what every
    reader checks of them (the documented counts, nothing left, the reports) must hold there too,
    and one run per world serves both, instead of a clean run and a faulted one of the same catalog."""
    _FOLDERS.append(tempfile.TemporaryDirectory(prefix="stepgraph-world-runs-"))
    reports = Path(_FOLDERS[-1].name)
    jobs: dict[str, dict] = {name: {"args": [*args, *(("--target-option", API_FAULTS) if name in FAULTED else ())]}
                             for name, args in WORLD_ARGS.items()}
    jobs["path-b-nvml"] = {"reports": reports, "args": [*jobs["path-b-nvml"]["args"], f"--alluredir={reports / 'allure'}",
                                                        f"--cucumberjson={reports / 'bdd.json'}", "-W", "error::ResourceWarning"]}
    return run_many(jobs)


def run_many(jobs: dict[str, dict]) -> dict[str, CatalogRun]:
    """Several `run_catalog(**job)`, one after the other, keyed like `jobs`."""
    return {key: run_catalog(*job.get("args", ()), files=job.get("files", ()), plugins=job.get("plugins", ()),
                             reports=job.get("reports"))
            for key, job in jobs.items()}
