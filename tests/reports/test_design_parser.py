"""Requirement ids from Markdown: headings, `| ID |` tables and numbered items, with titles and hashes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from reference_data import DYNAMO_PLAN as EXTERNAL_DOC
from reference_data import OUR_PLAN

from stepgraph.dsl.reports.design import parse_design_doc, parse_design_text
from stepgraph.dsl.reports.errors import InputError

REQUIRED = ([f"A{i}" for i in range(1, 5)] + [f"B{i}" for i in range(1, 9)] + [f"C{i}" for i in range(1, 5)]
            + [f"D{i}" for i in range(1, 4)] + [f"E{i}" for i in range(1, 4)]
            + [f"8.5.{i}" for i in range(1, 8)] + [f"8.6.{i}" for i in range(1, 4)])

needs_external = pytest.mark.skipif(not EXTERNAL_DOC.exists(),
                                    reason=f"Dynamo's test plan is not at {EXTERNAL_DOC} (shared/ is not a sibling of the repo)")


@needs_external
def test_real_document_yields_every_required_id() -> None:
    doc = parse_design_doc(EXTERNAL_DOC)
    missing = [rid for rid in REQUIRED if rid not in doc.requirements]
    assert missing == []
    assert set(REQUIRED) <= set(doc.coverage_ids())


@needs_external
def test_real_document_ids_come_from_all_three_forms() -> None:
    reqs = parse_design_doc(EXTERNAL_DOC).requirements
    assert (reqs["A3"].kind, reqs["A3"].line) == ("table", 84)
    assert (reqs["8.5.6"].kind, reqs["8.5.6"].title) == ("item", "NVML actually changed the cap on the GPU")
    assert (reqs["8.5"].kind, reqs["8.5"].line) == ("section", 502)
    assert reqs["8.6.3"].title == "dcgmConfigEnforce registers target config"


@needs_external
def test_comments_in_code_blocks_are_not_headings() -> None:
    # The runbook in §8.3 has shell comments such as `# Wait for controller-manager` inside fences.
    titles = {req.title for req in parse_design_doc(EXTERNAL_DOC).requirements.values()}
    assert not any("controller-manager" in title for title in titles)


def test_heading_ids_with_section_sign_are_requirements_plain_numbers_are_sections() -> None:
    doc = parse_design_text("# Plan\n\n### 8.5 Live pass\n\n#### §8.5.1 — Annotations land\n\ntext\n\n### A1: Selector\n")
    kinds = {rid: req.kind for rid, req in doc.requirements.items()}
    assert kinds == {"8.5": "section", "8.5.1": "heading", "A1": "heading"}
    assert doc.requirements["8.5.1"].title == "Annotations land"


def test_only_tables_headed_id_contribute() -> None:
    text = "# T\n\n| Role | Cap |\n|---|---|\n| B9 | 300 |\n\n| ID | Assertion |\n|---|---|\n| `B1` | pods listed. More. |\n"
    doc = parse_design_text(text)
    assert list(doc.requirements) == ["B1"]
    assert doc.requirements["B1"].title == "pods listed."


def test_nested_items_are_not_numbered_requirements() -> None:
    doc = parse_design_text("# D\n\n## 3 Checks\n\n1. first\n   1. nested\n2. second\n")
    assert [rid for rid in doc.requirements if rid != "3"] == ["3.1", "3.2"]


def test_hash_ignores_reflow_but_not_rewording() -> None:
    base = parse_design_text("# D\n\n| ID | What |\n|---|---|\n| A1 | caps land on  every GPU |\n").requirements["A1"]
    reflowed = parse_design_text("# D\n\n| ID | What |\n|---|---|\n| A1 | caps land on every GPU |\n").requirements["A1"]
    reworded = parse_design_text("# D\n\n| ID | What |\n|---|---|\n| A1 | caps land on most GPUs |\n").requirements["A1"]
    assert base.hash == reflowed.hash != reworded.hash


def test_same_id_twice_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    doc = tmp_path / "plan.md"
    doc.write_text("# D\n\n| ID | What |\n|---|---|\n| A1 | one |\n| A1 | two |\n")
    with pytest.raises(InputError) as caught:
        parse_design_doc(doc)
    assert str(caught.value).startswith(f"{doc}:6:1: requirement id A1 is defined twice (first at line 5)")


@pytest.mark.parametrize(("name", "content", "problem"), [
    ("plan.yaml", "requirements: [A1]\n", "design document is not Markdown (suffix '.yaml')"),
    ("plan.md", "requirements:\n  - A1\n", "no Markdown headings found"),
    ("plan.md", "# Notes\n\nnothing to trace here\n", "no requirement ids found"),
])
def test_documents_that_are_not_design_markdown_are_rejected(tmp_path: Path, name: str, content: str, problem: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError, match=re.escape(problem)):
        parse_design_doc(path)


def test_binary_and_missing_documents_are_rejected(tmp_path: Path) -> None:
    binary = tmp_path / "plan.md"
    binary.write_bytes(b"# D\n\x00\x01")
    with pytest.raises(InputError, match=r"plan.md:2:1: design document is binary"):
        parse_design_doc(binary)
    with pytest.raises(InputError, match="cannot read design document"):
        parse_design_doc(tmp_path / "absent.md")


def test_our_plan_defines_exactly_the_required_ids_as_requirements() -> None:
    doc = parse_design_doc(OUR_PLAN)
    assert doc.coverage_ids() == REQUIRED
    assert {req.kind for rid, req in doc.requirements.items() if rid in REQUIRED} == {"heading"}
    assert doc.requirements["8.5.7"].title == "A conflicting tenant gets the safe default on its GPU only"


def test_requirement_ids_include_sections_for_linking() -> None:
    from stepgraph.dsl.reports.design import requirement_ids

    assert {"8.5", "8.5.7", "A1"} <= requirement_ids(OUR_PLAN)


def test_inline_anchors_and_setext_headings_are_understood() -> None:
    doc = parse_design_text('# D\n\n### <a id="B5"></a>B5 — Conflict stays local\n\nC7 Setext style\n---------------\n')
    assert [(r.id, r.title, r.kind) for r in doc.requirements.values()] == [
        ("B5", "Conflict stays local", "heading"), ("C7", "Setext style", "heading")]
