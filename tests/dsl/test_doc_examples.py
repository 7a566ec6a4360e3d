"""Every scenario example in README.md and docs/design/*.md compiles against the real step
libraries: a Gherkin block with a `Feature:`, or a YAML block with `title:` or `feature:`. (Blocks
that show a fragment — a few steps, a table — are not whole files and are not linted.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stepgraph.dsl import REGISTRY
from stepgraph.dsl.compiler import compile_text

ROOT = Path(__file__).parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs" / "design").glob("*.md"))]
BLOCK = re.compile(r"^( *)```(gherkin|yaml)\n(.*?)^\1```", re.S | re.M)


def _examples() -> list[pytest.ParameterSet]:
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            body = "\n".join(line[len(m.group(1)) :] for line in m.group(3).splitlines()) + "\n"
            whole = "Feature:" in body if m.group(2) == "gherkin" else re.search(r"^(title|feature):", body, re.M)
            if whole:
                line = text[: m.start()].count("\n") + 1
                name = f"{doc.relative_to(ROOT)}:{line}"
                found.append(pytest.param(m.group(2), body, name, id=name))
    return found


EXAMPLES = _examples()


def test_the_docs_have_examples_of_both_syntaxes() -> None:
    assert {p.values[0] for p in EXAMPLES} == {"gherkin", "yaml"} and len(EXAMPLES) >= 4


@pytest.mark.parametrize(("syntax", "body", "where"), EXAMPLES)
def test_a_doc_example_lints_clean(syntax: str, body: str, where: str) -> None:
    REGISTRY.load_entry_points()
    suffix = ".feature" if syntax == "gherkin" else ".yaml"
    compiled = compile_text(body, Path(f"example{suffix}"), where, REGISTRY)
    assert [str(d) for d in compiled.diagnostics] == []
