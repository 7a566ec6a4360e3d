"""The corpus of typical QA mistakes (tests/dsl/data/qa_mistakes, measured by
bench/bench_qa_mistakes.py): every file is rejected by lint, each error in the project's
`file:line:col: what is wrong — what to do` form."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stepgraph.dsl import REGISTRY
from stepgraph.dsl.compiler import compile_file

CORPUS = Path(__file__).parent / "data" / "qa_mistakes"
FORMAT = re.compile(r"^[\w./-]+:\d+:\d+: .+ — .+$", re.S)


@pytest.mark.parametrize("path", sorted(p for p in CORPUS.iterdir() if p.suffix != ".txt"), ids=lambda p: p.stem)
def test_lint_rejects_the_mistake(path: Path) -> None:
    REGISTRY.load_entry_points()
    diagnostics = compile_file(path, REGISTRY, display=path.name).diagnostics
    assert diagnostics, f"{path.name} lints clean"
    assert all(FORMAT.match(str(d)) for d in diagnostics), [str(d) for d in diagnostics]
