"""A design document's requirement ids are kept on disk, named by what they were read from: a
second read of the same bytes imports no Markdown parser, an edited document is read again, and
a document that is not one is reported every time, never kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stepgraph.dsl.reports.design import requirement_ids
from stepgraph.dsl.reports.errors import InputError

DOC = "# Plan\n\n### A1 — Selector pins both halves\n\n### A2 — Caps land\n"

READ_IDS = """
import sys
from stepgraph.dsl.reports.design import requirement_ids
print(sorted(requirement_ids(sys.argv[1])), 'markdown_it' in sys.modules)
"""


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("STEPGRAPH_CACHE_DIR", str(cache))
    return cache


def _read_in_a_process(doc: Path) -> str:
    done = subprocess.run([sys.executable, "-c", READ_IDS, str(doc)], capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip()


def test_a_second_read_of_the_same_document_imports_no_markdown_parser(tmp_path: Path) -> None:
    doc = tmp_path / "plan.md"
    doc.write_text(DOC)
    assert _read_in_a_process(doc) == "['A1', 'A2'] True"
    assert _read_in_a_process(doc) == "['A1', 'A2'] False"


def test_an_edited_document_is_read_again(tmp_path: Path) -> None:
    doc = tmp_path / "plan.md"
    doc.write_text(DOC)
    assert requirement_ids(doc) == {"A1", "A2"}
    doc.write_text(DOC + "\n### A3 — Counters move\n")
    assert requirement_ids(doc) == {"A1", "A2", "A3"}


def test_what_is_not_a_design_document_is_reported_every_time(tmp_path: Path) -> None:
    doc = tmp_path / "plan.md"
    doc.write_text(DOC + "\n### A1 — Again\n")
    for _ in range(2):
        with pytest.raises(InputError, match="requirement id A1 is defined twice"):
            requirement_ids(doc)
    same_bytes = tmp_path / "plan.txt"
    same_bytes.write_text(DOC)
    (tmp_path / "good.md").write_text(DOC)
    assert requirement_ids(tmp_path / "good.md") == {"A1", "A2"}
    with pytest.raises(InputError, match="design document is not Markdown"):
        requirement_ids(same_bytes)  # the same bytes as a kept document, under a suffix that is not Markdown


@pytest.mark.parametrize("written", ["not json", "42", '"A1A2"', '{"A9": 1}', "[[1]]", '["A9", 7]'])
def test_a_kept_file_that_is_not_a_list_of_ids_is_read_from_the_document_instead(
        tmp_path: Path, own_cache: Path, written: str) -> None:
    doc = tmp_path / "plan.md"
    doc.write_text(DOC)
    assert requirement_ids(doc) == {"A1", "A2"}
    [kept] = (own_cache / "stepgraph" / "design-ids").iterdir()
    kept.write_text(written)  # someone else's file under the same name
    assert requirement_ids(doc) == {"A1", "A2"}
