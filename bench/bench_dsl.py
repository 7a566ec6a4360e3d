"""Benchmark: stepgraph compile + lint vs `pytest --collect-only`, and per-step executor overhead.

    .venv/bin/python bench/bench_dsl.py [--scenarios 1000] [--steps 10]

1. Generates N scenarios × M steps (common steps, Gherkin, 10 scenarios per file), times
   `compile_paths` (all static checks) in-process, renders the features, and times plain pytest-bdd
   `pytest --collect-only -q` on the same features (a subprocess; its start-up is measured
   separately and reported).
2. Runs the same "add a number to a counter" step K times through stepgraph and through a plain
   pytest-bdd step definition (both in a pytest subprocess), at two sizes; the difference per
   extra step is the per-step cost, which cancels start-up and fixed costs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stepgraph.dsl import REGISTRY
from stepgraph.dsl.compiler import compile_paths

STEPS = [
    'Given the value "v{i}" is bound as "v{i}"',
    'And the list "a, b, c" is bound as "l{i}"',
    'And a snapshot of "l{i}" is taken as "s{i}"',
    'And the time is noted as "t{i}"',
    "When we wait 1 agent tick",
    'Then "s{i}" equals "l{i}"',
    'And "l{i}" has the same elements as "s{i}"',
    'And "v{i}" is "v{i}"',
    'And within 2 agent ticks at least 10 s passed since "t{i}"',
    'And at least 15 s passed since "t{i}"',
]


def generate(folder: Path, scenarios: int, steps: int, per_file: int = 10) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(0, scenarios, per_file):
        lines = [f"Feature: Generated {f}"]
        for s in range(f, min(f + per_file, scenarios)):
            lines += ["", f"  @id:G{s}", f"  Scenario: generated {s}"]
            lines += [f"    {STEPS[k % len(STEPS)].format(i=k // len(STEPS))}" for k in range(steps)]
        (folder / f"gen_{f:05d}.feature").write_text("\n".join(lines) + "\n")


def timed(argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode not in (0, 5):
        raise SystemExit(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return elapsed


def bench_compile(work: Path, scenarios: int, steps: int) -> None:
    features = work / "features"
    generate(features, scenarios, steps)
    REGISTRY.load_entry_points()
    started = time.perf_counter()
    files, extra = compile_paths([features], REGISTRY)
    compile_s = time.perf_counter() - started
    assert all(f.ok for f in files) and not extra, [str(d) for f in files for d in f.diagnostics][:5]
    (work / "pytest.ini").write_text("[pytest]\n")
    (work / "test_features.py").write_text('from pytest_bdd import scenarios\n\nscenarios("features")\n')
    (work / "test_empty.py").write_text("def test_nothing():\n    pass\n")
    py = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:stepgraph", "--collect-only", "-q"]
    startup = min(timed([*py, "test_empty.py"], work) for _ in range(3))
    collect = min(timed([*py, "test_features.py"], work) for _ in range(3))
    print(
        f"compile + lint, {scenarios} scenarios × {steps} steps ({len(files)} files): {compile_s:.3f} s "
        f"({compile_s / (scenarios * steps) * 1e6:.1f} µs/step)"
    )
    print(f"pytest-bdd --collect-only on the same features: {collect:.3f} s wall ({startup:.3f} s of it is pytest start-up)")
    print(f"ratio compile+lint / collect-only: {compile_s / collect:.2f} (excluding start-up: {compile_s / (collect - startup):.2f})")


PLAIN_CONFTEST = """
from pytest_bdd import parsers, when

COUNTER = {"n": 0}

@when(parsers.re(r"we add (?P<n>\\d+) to the counter"), converters={"n": int})
def add(n):
    COUNTER["n"] += n
"""

STEPGRAPH_CONFTEST = """
from stepgraph.dsl import REGISTRY, Params

COUNTER = {"n": 0}


class Add(Params):
    n: int


@REGISTRY.when("bench.add", "we add {n:int} to the counter", key="bench_add", params=Add)
def add(ctx, p):
    COUNTER["n"] += p.n
"""


def _step_project(root: Path, kind: str, scenarios: int, steps: int) -> Path:
    project = root / f"{kind}-{steps}"
    (project / "features").mkdir(parents=True)
    lines = ["Feature: Steps"]
    for s in range(scenarios):
        lines += ["", f"  Scenario: s{s}"] + ["    When we add 1 to the counter"] * steps
    (project / "features" / "steps.feature").write_text("\n".join(lines) + "\n")
    if kind == "plain":
        (project / "pytest.ini").write_text("[pytest]\n")
        (project / "conftest.py").write_text(PLAIN_CONFTEST)
        (project / "test_steps.py").write_text('from pytest_bdd import scenarios\n\nscenarios("features")\n')
    else:
        (project / "pytest.ini").write_text("[pytest]\nstepgraph_paths = features\ntestpaths = features\n")
        (project / "conftest.py").write_text(STEPGRAPH_CONFTEST)
    return project


def bench_steps(work: Path, scenarios: int, small: int, large: int) -> None:
    def run(kind: str, steps: int) -> float:
        project = _step_project(work, kind, scenarios, steps)
        extra = ["-p", "no:stepgraph"] if kind == "plain" else ["--target", "local"]
        return min(timed([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra], project) for _ in range(3))

    per_step = {}
    for kind in ("plain", "stepgraph"):
        t_small, t_large = run(kind, small), run(kind, large)
        per_step[kind] = (t_large - t_small) / (scenarios * (large - small))
        print(
            f"{kind:9s}: {scenarios} scenarios × {small} steps {t_small:.3f} s, × {large} steps {t_large:.3f} s "
            f"→ {per_step[kind] * 1e6:.0f} µs per step"
        )
    print(
        f"per-step ratio stepgraph / plain pytest-bdd: {per_step['stepgraph'] / per_step['plain']:.2f} "
        "(stepgraph's includes compiling the step at collection)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stepgraph-bench-") as tmp:
        work = Path(tmp)
        bench_compile(work / "compile", args.scenarios, args.steps)
        bench_steps(work / "steps", scenarios=20, small=10, large=510)


if __name__ == "__main__":
    main()
