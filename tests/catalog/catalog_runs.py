"""Run the scenario catalog (or part of it) on the twin in a fresh pytest process → outcomes by id.

Each run starts its own twin from a world, so fault switches and worlds never leak between runs;
`run_many` runs several at once (they are independent processes on loopback).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "scenarios" / "multi_dgd"
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class CatalogRun:
    returncode: int
    outcomes: dict[str, dict[str, str]]
    output: str

    def ids(self, outcome: str) -> set[str]:
        return {i for i, r in self.outcomes.items() if r["outcome"] == outcome}


def run_catalog(*args: str, files: tuple[str, ...] = (), env: dict[str, str] | None = None) -> CatalogRun:
    """`pytest <files or the whole catalog> <args>` from the repo root, on the twin by default."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "outcomes.json"
        environ = {**os.environ, **(env or {}), "CATALOG_OUTCOMES": str(out),
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
        paths = [str(CATALOG / f) for f in files] or [str(CATALOG)]
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", *paths, "-p", "outcome_recorder", "-p", "no:cacheprovider", "-q", *args],
            cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300,
        )
        outcomes = json.loads(out.read_text()) if out.exists() else {}
    return CatalogRun(proc.returncode, outcomes, proc.stdout + proc.stderr)


WORLD_ARGS = {
    "path-b-nvml": ["--target-option", "world=path-b"],
    "path-b-dcgm": ["--target-option", "world=path-b-dcgm"],
    "path-a-nvml": ["--target-option", "world=path-a"],
    "path-a-dcgm": ["--target-option", "world=path-a", "--target-option", "actuator=dcgm"],
}


@functools.cache
def world_runs() -> dict[str, CatalogRun]:
    """The whole catalog once per §1.1 combination, shared by every test module of this process."""
    return run_many({name: {"args": args} for name, args in WORLD_ARGS.items()}, workers=2)


def run_many(jobs: dict[str, dict], workers: int = 3) -> dict[str, CatalogRun]:
    """Several `run_catalog(**kwargs)` at once, keyed like `jobs`."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {key: pool.submit(run_catalog, *job.get("args", ()), files=job.get("files", ()), env=job.get("env"))
                   for key, job in jobs.items()}
        return {key: future.result() for key, future in futures.items()}
