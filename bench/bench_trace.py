"""Trace generation time for 1,000 scenarios × 200 requirements → figures on stdout.

    .venv/bin/python bench/bench_trace.py [--scenarios 1000] [--requirements 200] [--repeat 5]

Builds a synthetic design document (requirements as `| ID |` table rows, headings and numbered
items) and a results file with the given number of scenarios spread over two worlds, then times
each stage of `stepgraph trace` and the whole CLI run (median of --repeat runs).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from stepgraph.dsl.reports import render, results
from stepgraph.dsl.reports.cli import main
from stepgraph.dsl.reports.design import parse_design_doc
from stepgraph.dsl.reports.trace import Inputs, build_trace

OUTCOMES = ["passed"] * 8 + ["failed", "skipped"]


def design_doc(n: int) -> tuple[str, list[str]]:
    ids = [f"R{i}" for i in range(n)]
    third = n // 3
    lines = ["# Synthetic plan", "", "## Table requirements", "", "| ID | Assertion | Tier |", "|---|---|---|"]
    lines += [f"| {rid} | requirement {rid} holds on every GPU of the node | 2 |" for rid in ids[:third]]
    lines += ["", "## Heading requirements", ""]
    for rid in ids[third:2 * third]:
        lines += [f"### {rid} — requirement {rid}", "", f"What must hold for {rid}, why, and how it is observed.", ""]
    lines += ["## 9 Numbered requirements", ""]
    numbered = [f"9.{k + 1}" for k in range(n - 2 * third)]
    lines += [f"{k + 1}. **Item {k + 1}** holds after one reconcile tick." for k in range(len(numbered))]
    return "\n".join(lines) + "\n", ids[: 2 * third] + numbered


def results_doc(n: int, ids: list[str], rng: random.Random) -> dict:
    records = []
    for i in range(n):
        design = rng.sample(ids, rng.randint(1, 3))
        outcome = rng.choice(OUTCOMES)
        world = "stub-workers" if i % 2 else "planners"
        steps = [{"keyword": kw, "name": f"step {k}", "line": 10 + k, "status": "passed", "duration_s": 0.001}
                 for k, kw in enumerate(["Given", "When", "Then", "And"])]
        records.append({
            "nodeid": f"test_f{i // 50}.py::test_s{i}", "id": f"S{i}", "design": design, "name": f"Scenario {i}",
            "keyword": "Scenario", "line": 5 + i % 50, "tags": [f"id:S{i}"] + [f"design:{d}" for d in design],
            "feature": {"name": f"F{i // 50}", "file": f"features/f{i // 50}.feature", "line": 1, "keyword": "Feature", "tags": []},
            "outcome": outcome, "reason": None if outcome == "passed" else f"{outcome}: because",
            "duration_s": 0.004, "phases": {"call": {"outcome": "passed" if outcome == "passed" else "failed", "duration_s": 0.004}},
            "steps": steps, "target": "twin", "world": world, "seed": "7", "fingerprint": {"twin": "0.1.0"}, "worker": None,
        })
    return results.assemble(records, started_at=datetime(2026, 11, 30, tzinfo=UTC), duration_s=4.0,
                            args=[], collection_errors=[])


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def run(n_scenarios: int, n_requirements: int, repeat: int) -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="bench-trace-") as tmp:
        tmpdir = Path(tmp)
        text, ids = design_doc(n_requirements)
        doc_path = tmpdir / "plan.md"
        doc_path.write_text(text)
        res_path = tmpdir / "results.json"
        results.write(results_doc(n_scenarios, ids, rng), res_path)
        doc = parse_design_doc(doc_path)
        run_doc = results.load(res_path)
        trace = build_trace(Inputs(docs=[doc], runs=[run_doc]))
        figures = {
            "parse design doc": median_ms(lambda: parse_design_doc(doc_path), repeat),
            "load + validate results": median_ms(lambda: results.load(res_path), repeat),
            "build trace": median_ms(lambda: build_trace(Inputs(docs=[doc], runs=[run_doc])), repeat),
            "render md": median_ms(lambda: render.render_markdown(trace), repeat),
            "render html": median_ms(lambda: render.render_html(trace), repeat),
            "render json": median_ms(lambda: json.dumps(trace, indent=1), repeat),
            "whole CLI (md+html+json)": median_ms(lambda: _quiet(main, ["--design", str(doc_path), "--results", str(res_path),
                                                                       "--out", str(tmpdir / "out")]), repeat),
        }
        sizes = {f.name: f.stat().st_size for f in sorted([res_path, *(tmpdir / "out").iterdir()])}
    print(f"trace benchmark: {n_scenarios} scenarios × {len(doc.coverage_ids())} requirements, "
          f"{trace['totals']['coverage_pct']}% covered, median of {repeat}")
    for name, ms in figures.items():
        print(f"  {name:<28} {ms:8.1f} ms")
    print("  file sizes: " + ", ".join(f"{name} {size / 1024:.0f} KiB" for name, size in sizes.items()))


def _quiet(fn: Callable[[list[str]], int], argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(argv)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--requirements", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    run(args.scenarios, args.requirements, args.repeat)
