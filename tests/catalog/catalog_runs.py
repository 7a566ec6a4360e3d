"""Run the scenario catalog (or part of it) on the twin with pytest → outcomes by scenario id.

Each run starts its own twin from a world, so fault switches and worlds never leak between runs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import pytest
from outcome_recorder import OutcomeRecorder

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "scenarios" / "multi_dgd"


@dataclass(frozen=True)
class CatalogRun:
    returncode: int
    outcomes: dict[str, dict[str, str]]
    output: str

    def ids(self, outcome: str) -> set[str]:
        return {i for i, r in self.outcomes.items() if r["outcome"] == outcome}


def run_catalog(*args: str, files: tuple[str, ...] = (), plugins: tuple[object, ...] = ()) -> CatalogRun:
    """`pytest <files or the whole catalog> <args>` in this process, on the twin by default.

    In-process keeps a run to its own work (no interpreter start, no re-import); every run still
    starts its own twin from its world, so switches and state never leak between runs.
    """
    recorder = OutcomeRecorder()
    paths = [str(CATALOG / f) for f in files] or [str(CATALOG)]
    code = pytest.main(
        [*paths, "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), "-p", "no:cacheprovider", "-p", "no:terminal", *args],
        plugins=[recorder, *plugins],
    )
    text = "\n".join(r["text"] for r in recorder.results.values() if r["text"]) + "".join(recorder.exits)
    return CatalogRun(int(code), dict(recorder.results), text)


WORLD_ARGS = {
    "path-b-nvml": ["--target-option", "world=path-b"],
    "path-b-dcgm": ["--target-option", "world=path-b-dcgm"],
    "path-a-nvml": ["--target-option", "world=path-a"],
    "path-a-dcgm": ["--target-option", "world=path-a", "--target-option", "actuator=dcgm"],
}


@functools.cache
def world_runs() -> dict[str, CatalogRun]:
    """The whole catalog once per §1.1 combination, shared by every test module of this process."""
    return run_many({name: {"args": args} for name, args in WORLD_ARGS.items()})


def run_many(jobs: dict[str, dict]) -> dict[str, CatalogRun]:
    """Several `run_catalog(**job)`, one after the other, keyed like `jobs`."""
    return {key: run_catalog(*job.get("args", ()), files=job.get("files", ()), plugins=job.get("plugins", ()))
            for key, job in jobs.items()}
