"""How many typical QA mistakes the language catches before any cluster time is spent.

The corpus is tests/dsl/data/qa_mistakes/: one scenario file per mistake (keyword, metric, tag,
unit, index, window), named <category>-<what>.*, and option-typos.txt (one --target-option per
line, caught when the run starts, exit 2). A file counts as caught when `stepgraph lint` reports
at least one error for it; an option when pytest exits 2 before collecting.

    .venv/bin/python bench/bench_qa_mistakes.py                       # this tree
    PYTHONPATH=/path/to/pkg .venv/bin/python bench/bench_qa_mistakes.py   # another tree's stepgraph
      (a folder with stepgraph/{dsl,steps,targets,twin} linking to an older checkout: "before")
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "dsl" / "data" / "qa_mistakes"


def lint_caught(path: Path) -> bool:
    from stepgraph.dsl import REGISTRY
    from stepgraph.dsl.compiler import compile_file

    REGISTRY.load_entry_points()
    return bool(compile_file(path, REGISTRY).diagnostics)


def option_caught(option: str, folder: Path) -> bool:
    """pytest on one plain scenario (valid in every version of the language) with the option."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "--target", "twin",
         "--target-option", option],
        cwd=folder, capture_output=True, text=True, env=os.environ.copy(), timeout=300,
    )
    return run.returncode == 2


def plain_project(folder: Path) -> Path:
    (folder / "scenarios").mkdir()
    (folder / "pytest.ini").write_text("[pytest]\nstepgraph_paths = scenarios\n")
    (folder / "scenarios" / "s.feature").write_text('Feature: F\n  Scenario: S\n    Given the time is noted as "t0"\n')
    return folder


def main() -> int:
    import stepgraph.dsl

    caught: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    missed = []
    project = plain_project(Path(tempfile.mkdtemp(prefix="bench-qa-")))
    for path in sorted(CORPUS.iterdir()):
        if path.suffix == ".txt":
            for option in path.read_text().split():
                hit = option_caught(option, project)
                caught["option"][0] += hit
                caught["option"][1] += 1
                missed += [] if hit else [f"--target-option {option}"]
            continue
        hit = lint_caught(path)
        category = path.name.split("-", 1)[0]
        caught[category][0] += hit
        caught[category][1] += 1
        missed += [] if hit else [path.name]
    print(f"stepgraph from {Path(stepgraph.dsl.__file__).parent}")
    for category, (hits, total) in sorted(caught.items()):
        print(f"  {category:8} {hits}/{total}")
    hits, total = sum(c[0] for c in caught.values()), sum(c[1] for c in caught.values())
    print(f"  {'total':8} {hits}/{total} caught")
    for name in missed:
        print(f"  missed: {name}")
    shutil.rmtree(project)
    return 0


if __name__ == "__main__":
    sys.exit(main())
