"""The multi-DGD catalog on the twin → wall time, virtual seconds waited and API calls per scenario.

    .venv/bin/python bench/bench_catalog.py [--repeat N]

For each §1.1 world (Path A/B × NVML/DCGM) it runs the whole catalog in-process with pytest and
prints, per scenario: the outcome, the virtual seconds that passed on the twin's clock (setup,
steps and teardown), the hand-written live module's fixed waits for the same check (contract
§10.2: 45 s convergence deadline, 30 s settle before the metric scrape, 35 s after the conflict
plus 20 s recovery) and the ratio, and the Kubernetes API calls (REST calls and exec streams).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORLDS = {
    "Path B, NVML": ["--target-option", "world=path-b"],
    "Path B, DCGM": ["--target-option", "world=path-b-dcgm"],
    "Path A, NVML": ["--target-option", "world=path-a"],
    "Path A, DCGM": ["--target-option", "world=path-a-dcgm"],
}
# The seed's fixed waits for the checks that have them (contract §10.2).
SEED_WAITS = {"A1-A2": 45.0, "B2": 30.0, "B5": 35.0 + 20.0}


class Meter:
    """A pytest plugin: per scenario id, virtual seconds and API calls from setup to teardown."""

    def __init__(self) -> None:
        self.session: Any = None
        self.cache: dict[str, Any] | None = None
        self.rows: dict[str, dict[str, Any]] = {}

    def _now(self) -> tuple[float, int]:
        clock = self.session.clock.now() if self.session is not None else 0.0
        cluster = (self.cache or {}).get("cluster")
        return clock, cluster.calls.total if cluster is not None else 0

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        t0, c0 = self._now()
        yield
        t1, c1 = self._now()
        sid = next((m.name.removeprefix("id:") for m in item.iter_markers() if m.name.startswith("id:")), item.name)
        self.rows.setdefault(sid, {}).update(virtual=t1 - t0, calls=c1 - c0)

    def pytest_bdd_before_scenario(self, request: pytest.FixtureRequest) -> None:
        self.session = request.getfixturevalue("stepgraph_session")
        self.cache = request.getfixturevalue("stepgraph_scenario").cache

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        sid = next((k.removeprefix("id:") for k in report.keywords if k.startswith("id:")), report.nodeid)
        row = self.rows.setdefault(sid, {"outcome": "passed"})
        if report.outcome != "passed" or "outcome" not in row:
            row["outcome"] = report.outcome if report.outcome != "passed" else row.get("outcome", "passed")


def run_world(args: list[str]) -> tuple[float, int, Meter]:
    meter = Meter()
    start = time.perf_counter()
    code = pytest.main([str(ROOT / "scenarios" / "multi_dgd"), "-p", "no:cacheprovider", "-p", "no:terminal",
                        *args], plugins=[meter])
    return time.perf_counter() - start, int(code), meter


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="whole-catalog runs per world (median wall time)")
    options = parser.parse_args(argv)
    for world, args in WORLDS.items():
        walls: list[float] = []
        per_run: list[dict[str, dict[str, Any]]] = []
        code = 0
        for _ in range(options.repeat):
            wall, code, meter = run_world(args)
            walls.append(wall)
            per_run.append({sid: row for sid, row in meter.rows.items() if row.get("outcome") != "skipped"})
        ids = sorted(per_run[-1])
        totals = [sum(r["virtual"] for r in run.values()) for run in per_run]
        print(f"\n## {world}: exit {code}, {len(ids)} ran, wall median {statistics.median(walls):.2f} s "
              f"(min {min(walls):.2f}, n={len(walls)}); virtual s in all: median {statistics.median(totals):.0f} "
              f"(range {min(totals):.0f}–{max(totals):.0f})")
        print(f"{'scenario':14} {'outcome':8} {'virtual s':>12} {'seed fixed s':>12} {'ratio':>6} {'API calls':>10}")
        for sid in ids:
            virtual = [run[sid]["virtual"] for run in per_run if sid in run]
            calls = [run[sid]["calls"] for run in per_run if sid in run]
            seed = SEED_WAITS.get(sid)
            v = statistics.median(virtual)
            spread = f"{v:.0f}" if min(virtual) == max(virtual) else f"{v:.0f} ({min(virtual):.0f}–{max(virtual):.0f})"
            ratio = f"{v / seed:.2f}" if seed else "—"
            print(f"{sid:14} {per_run[-1][sid]['outcome']:8} {spread:>12} {seed if seed else '—':>12} {ratio:>6} "
                  f"{statistics.median(calls):10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
