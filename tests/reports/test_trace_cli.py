"""`stepgraph trace` end to end: coverage, orphans, suspect links, expectations, baseline diff, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import DOC, record, write_results
from reference_data import DYNAMO_PLAN as EXTERNAL_DOC
from test_design_parser import REQUIRED

from stepgraph.dsl.reports.cli import main
from stepgraph.dsl.reports.errors import parse_json


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "plan.md"
    path.write_text(DOC)
    return path


def trace(tmp_path: Path, *args: str) -> tuple[int, dict]:
    code = main([*args, "--out", str(tmp_path / "out")])
    out = tmp_path / "out" / "trace.json"
    return code, json.loads(out.read_text()) if out.exists() else {}


def test_coverage_lists_covered_and_uncovered_requirements(tmp_path: Path, doc: Path) -> None:
    run = write_results(tmp_path / "r.json", [record("B1"), record("S1", "failed", ["8.5.2"])])
    code, result = trace(tmp_path, "--design", str(doc), "--results", str(run))
    assert code == 0
    (document,) = result["documents"]
    assert (document["counted"], document["covered"], document["coverage_pct"]) == (4, 2, 50.0)
    assert document["uncovered"] == ["B2", "8.5.1"]
    assert document["failing"] == ["8.5.2"]
    rows = {row["id"]: row for row in document["requirements"]}
    assert "1" not in rows and "8.5" not in rows  # sections are not requirements unless linked
    assert rows["B1"]["links"][0]["results"] == {"twin / stub-workers": {"outcome": "passed", "reason": None}}
    assert result["runs"][0]["environments"] == [{"target": "twin", "world": "stub-workers", "seed": "1",
                                                  "fingerprint": {"twin": "0.1.0"}}]
    assert "world `stub-workers`, seed `1`, twin `0.1.0`" in (tmp_path / "out" / "trace.md").read_text()


def test_only_globs_narrow_what_coverage_counts(tmp_path: Path, doc: Path) -> None:
    run = write_results(tmp_path / "r.json", [record("B1")])
    _, result = trace(tmp_path, "--design", str(doc), "--results", str(run), "--only", "B*")
    assert result["totals"] == {"requirements": 2, "covered": 1, "passing": 1, "coverage_pct": 50.0, "suspect": 0}


def test_last_result_per_target_and_world_wins(tmp_path: Path, doc: Path) -> None:
    old = write_results(tmp_path / "old.json", [record("B1", "failed"), record("B1", "failed", world="conflict")],
                        started="2026-11-29T05:00:00")
    new = write_results(tmp_path / "new.json", [record("B1", "passed")], started="2026-11-30T05:00:00")
    _, result = trace(tmp_path, "--design", str(doc), "--results", str(new), str(old))
    row = next(r for r in result["documents"][0]["requirements"] if r["id"] == "B1")
    assert {col: res["outcome"] for col, res in row["links"][0]["results"].items()} == {
        "twin / stub-workers": "passed", "twin / conflict": "failed"}


def test_orphan_scenarios_are_reported_and_exit_2(tmp_path: Path, doc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_results(tmp_path / "r.json", [record("B1"), record("X9", design=["Z9"], line=12)])
    code, result = trace(tmp_path, "--design", str(doc), "--results", str(run))
    assert code == 2
    assert result["orphans"] == [{"scenario": "X9", "name": "Scenario X9", "where": "features/f.feature:12", "ids": ["Z9"]}]
    assert "features/f.feature:12:1: scenario 'X9' claims unknown requirement Z9 — fix the @design tag" in capsys.readouterr().err
    assert trace(tmp_path, "--design", str(doc), "--results", str(run), "--allow-orphans")[0] == 0


def test_links_turn_suspect_when_the_requirement_text_changes(tmp_path: Path, doc: Path) -> None:
    run = write_results(tmp_path / "r.json", [record("B1"), record("B2")])
    lock = tmp_path / "review.lock.json"
    assert trace(tmp_path, "--design", str(doc), "--results", str(run), "--lock", str(lock), "--update-lock")[0] == 0
    rows = json.loads((tmp_path / "out" / "trace.json").read_text())["documents"][0]["requirements"]
    assert json.loads(lock.read_text())["documents"]["plan.md"]["B1"] == {"B1": next(r["hash"] for r in rows if r["id"] == "B1")}
    _, unchanged = trace(tmp_path, "--design", str(doc), "--results", str(run), "--lock", str(lock))
    assert unchanged["totals"]["suspect"] == 0
    doc.write_text(DOC.replace("| B1 | pods are listed |", "| B1 | pods are listed, sorted by name |"))
    _, changed = trace(tmp_path, "--design", str(doc), "--results", str(run), "--lock", str(lock))
    assert changed["documents"][0]["suspect"] == [{"id": "B1", "scenario": "B1"}]
    assert "B1" in (tmp_path / "out" / "trace.md").read_text().split("**Suspect links**")[1]


def test_the_same_id_in_two_documents_is_reviewed_per_document(tmp_path: Path, doc: Path) -> None:
    theirs = tmp_path / "theirs" / "plan.md"
    theirs.parent.mkdir()
    theirs.write_text("# Theirs\n\n| ID | Assertion |\n|---|---|\n| B1 | five pods, three DGD labels |\n")
    run = write_results(tmp_path / "r.json", [record("B1")])
    lock = tmp_path / "review.lock.json"
    both = ["--design", str(doc), str(theirs), "--results", str(run), "--lock", str(lock)]
    assert trace(tmp_path, *both, "--update-lock")[0] == 0
    assert sorted(json.loads(lock.read_text())["documents"]) == ["plan.md", "theirs/plan.md"]
    theirs.write_text(theirs.read_text().replace("five pods", "six pods"))
    _, result = trace(tmp_path, *both)
    assert [d["suspect"] for d in result["documents"]] == [[], [{"id": "B1", "scenario": "B1"}]]


def test_unknown_requirement_in_the_lock_is_an_error_at_its_line(tmp_path: Path, doc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_results(tmp_path / "r.json", [record("B1")])
    lock = tmp_path / "review.lock.json"
    lock.write_text('{"schema": "stepgraph-review-lock/1",\n "documents": {"plan.md": {\n  "B1": {"B1": "abc",\n         "Q7": "def"}}}}\n')
    assert trace(tmp_path, "--design", str(doc), "--results", str(run), "--lock", str(lock))[0] == 2
    assert f"{lock}:4:10: unknown requirement id 'Q7' in plan.md (scenario 'B1')" in capsys.readouterr().err


def test_expected_outcomes_per_world_are_checked(tmp_path: Path, doc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_results(tmp_path / "r.json", [record("B1"), record("B2", "skipped", tags=["needs:dcgm"]),
                                              record("S1", "passed", ["8.5.1"], world="conflict")])
    expect = tmp_path / "expect.yaml"
    expect.write_text("- name: stub-workers, NVML pass\n  world: stub-workers\n  without_tags: [needs:dcgm]\n"
                      "  expect: {passed: 1, skipped: 0}\n- name: conflict world\n  world: conflict\n  expect: {passed: 2}\n"
                      "- name: elsewhere\n  files: [scenarios/*]\n  expect: {total: 0}\n"
                      "- name: here\n  files: [features/*]\n  expect: {total: 3}\n")
    code, result = trace(tmp_path, "--design", str(doc), "--results", str(run), "--expect", str(expect))
    assert [(e["name"], e["ok"], e["actual"]) for e in result["expectations"]] == [
        ("stub-workers, NVML pass", True, {"passed": 1, "skipped": 0}), ("conflict world", False, {"passed": 1}),
        ("elsewhere", True, {"total": 0}), ("here", True, {"total": 3})]
    assert code == 1
    assert f"{expect}:5:1: expectation 'conflict world' not met" in capsys.readouterr().err


def test_malformed_expectations_are_an_error_at_their_line(tmp_path: Path, doc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_results(tmp_path / "r.json", [record("B1")])
    expect = tmp_path / "expect.yaml"
    expect.write_text("- name: nvml\n  expect: {passd: 1}\n")
    assert trace(tmp_path, "--design", str(doc), "--results", str(run), "--expect", str(expect))[0] == 2
    assert f"{expect}:2:" in capsys.readouterr().err


def test_diff_against_a_baseline_names_new_failures_fixed_and_flaky(tmp_path: Path, doc: Path) -> None:
    base = write_results(tmp_path / "base.json", [record("B1"), record("B2", "failed"), record("S1", "passed", ["8.5.1"])],
                         started="2026-11-29T05:00:00")
    first = write_results(tmp_path / "a.json", [record("B1", "failed"), record("B2"), record("S1", "failed", ["8.5.1"])],
                          started="2026-11-30T05:00:00")
    rerun = write_results(tmp_path / "b.json", [record("S1", "passed", ["8.5.1"])], started="2026-11-30T06:00:00")
    _, result = trace(tmp_path, "--design", str(doc), "--results", str(first), str(rerun), "--baseline", str(base))
    diff = result["diff"]
    assert [(e["scenario"], e["was"], e["outcome"]) for e in diff["new_failures"]] == [("B1", "passed", "failed")]
    assert [e["scenario"] for e in diff["fixed"]] == ["B2"]
    assert [(e["scenario"], e["seen"]) for e in diff["flaky"]] == [("S1", {"failed": 1, "passed": 1})]
    assert "🔴 new failure `B1`" in (tmp_path / "out" / "trace.md").read_text()


def test_brackets_in_strings_do_not_nest() -> None:
    text = '{"note": "' + "[" * 300 + '\\"' + "{" * 300 + '"}'
    assert parse_json(text, "r.json", "results file", "re-run")["note"].endswith("{" * 300)


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read results file"),
    ('{"schema": "stepgraph-results/1",\n "run": {', ":2:10: results file is truncated"),
    ("<testsuites/>", ":1:1: results file is not valid JSON"),
    ('{"schema": "cucumber"}', ":1:1: not a stepgraph results file"),
    ('{"schema": "stepgraph-results/1",\n "run": ' + "[" * 100_000 + "]" * 100_000 + "}",
     ":2:208: results file nests deeper than 200 levels — re-run the tests to write it again"),
    # Brackets in strings do not count, whatever the string holds before them (an escaped quote,
    # an escaped line break), and are still told apart from the nesting that follows.
    ('{"schema": "stepgraph-results/1", "note": "[[[\\"{{{\\\n]]]",\n "run": ' + "[" * 300 + "]" * 300 + "}",
     ":3:208: results file nests deeper than 200 levels"),
    ('{"note": "' + "[" * 300 + '",\n "run": ' + "[{" * 150 + "}]" * 150 + "}",
     ":2:208: results file nests deeper than 200 levels"),
    ('{"schema": "stepgraph-results/1",\n "run": ' + "9" * 5001 + "}",
     ":2:9: results file holds a number of more than 4300 digits — re-run the tests to write it again"),
])
def test_unreadable_or_truncated_results_exit_2(tmp_path: Path, doc: Path, capsys: pytest.CaptureFixture[str],
                                                content: str | None, message: str) -> None:
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    assert trace(tmp_path, "--design", str(doc), "--results", str(bad))[0] == 2
    err = capsys.readouterr().err
    assert f"stepgraph trace: {bad}" in err and message in err and "Traceback" not in err


def test_a_malformed_record_is_located_at_its_line(tmp_path: Path, doc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_results(tmp_path / "r.json", [record("B1"), record("B2")])
    lines = path.read_text().splitlines()
    bad_line = [k for k, line in enumerate(lines) if line.startswith('   "outcome": "passed"')][-1]
    lines[bad_line] = lines[bad_line].replace('"passed"', '"green"')
    path.write_text("\n".join(lines))
    assert trace(tmp_path, "--design", str(doc), "--results", str(path))[0] == 2
    assert f"{path}:{bad_line + 1}:4: scenarios/1/outcome: must be one of ['passed'," in capsys.readouterr().err


def test_bad_design_documents_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_results(tmp_path / "r.json", [record("B1")])
    twice = tmp_path / "twice.md"
    twice.write_text("# D\n\n### A1 one\n\n### A1 two\n")
    assert trace(tmp_path, "--design", str(twice), "--results", str(run))[0] == 2
    assert f"{twice}:5:1: requirement id A1 is defined twice (first at line 3)" in capsys.readouterr().err
    yaml_doc = tmp_path / "plan.yaml"
    yaml_doc.write_text("a: 1\n")
    assert trace(tmp_path, "--design", str(yaml_doc), "--results", str(run))[0] == 2


def test_usage_errors_exit_2_without_traceback(tmp_path: Path, doc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_results(tmp_path / "r.json", [record("B1")])
    with pytest.raises(SystemExit) as exited:
        main(["--design", str(doc), "--results", str(run), "--out", str(tmp_path), "--format", "pdf"])
    assert exited.value.code == 2
    assert "unknown --format pdf" in capsys.readouterr().err


def test_markdown_fits_a_pr_comment_even_for_a_large_trace(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text("# Big\n\n| ID | What |\n|---|---|\n" + "".join(f"| R{i} | requirement number {i} " + "x" * 200 + " |\n"
                                                        for i in range(600)))
    run = write_results(tmp_path / "r.json", [record(f"S{i}", design=[f"R{i}"]) for i in range(0, 600, 2)])
    assert trace(tmp_path, "--design", str(big), "--results", str(run), "--format", "md")[0] == 0
    text = (tmp_path / "out" / "trace.md").read_text()
    assert len(text) < 65_536
    assert "300/600 requirements covered (50.0%)" in text


def test_formats_select_the_files_written(tmp_path: Path, doc: Path) -> None:
    run = write_results(tmp_path / "r.json", [record("B1")])
    assert main(["--design", str(doc), "--results", str(run), "--out", str(tmp_path / "o"), "--format", "md,html"]) == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["trace.html", "trace.md"]


@pytest.mark.skipif(not EXTERNAL_DOC.exists(), reason=f"Dynamo's test plan is not at {EXTERNAL_DOC}")
def test_trace_against_the_real_document_lists_every_required_id(sample_runs: dict[str, Path], tmp_path: Path) -> None:
    results_file = sample_runs["xdist-2-workers"] / "out" / "results.json"
    code, result = trace(tmp_path, "--design", str(EXTERNAL_DOC), "--results", str(results_file))
    assert code == 0
    listed = [row["id"] for row in result["documents"][0]["requirements"]]
    assert [rid for rid in REQUIRED if rid not in listed] == []
    rows = {row["id"]: row for row in result["documents"][0]["requirements"]}
    assert (rows["8.5.4"]["status"], rows["C1"]["status"], rows["B7"]["status"]) == ("passed", "failing", "skipped")


def test_a_catalog_run_keeps_the_previous_results_as_baseline(tmp_path: Path, doc: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from stepgraph.dsl.reports import run_reports

    out = tmp_path / "reports"
    assert run_reports.keep_previous(out) is None
    out.mkdir()
    write_results(out / "results.json", [record("B1")], started="2026-11-29T05:00:00")
    previous = run_reports.keep_previous(out)
    assert previous == out / "previous" / "results.json" and not (out / "results.json").exists()
    assert run_reports.pytest_args(out)[0] == f"--stepgraph-results={out / 'results.json'}"
    write_results(out / "results.json", [record("B1", "failed")])
    assert run_reports.write_trace(out, [doc], baseline=previous) == 0
    assert "🔴 new failure `B1`" in (out / "trace.md").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["previous", "results.json", "trace.html", "trace.json", "trace.md"]


def test_markdown_keeps_long_lists_short_and_messages_inert(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text("# Big\n\n| ID | What |\n|---|---|\n" + "".join(f"| R{i} | requirement {i} |\n" for i in range(120)))
    failing = [record(f"S{i}", "failed", [f"R{i}"]) for i in range(120)]
    failing[0]["reason"] = "expected <b>300</b> | got 280"
    run = write_results(tmp_path / "r.json", failing)
    assert trace(tmp_path, "--design", str(big), "--results", str(run), "--format", "md")[0] == 0
    text = (tmp_path / "out" / "trace.md").read_text()
    assert text.count("← `S") == 50 and "… and 70 more (see trace.html)" in text
    assert "expected &lt;b&gt;300&lt;/b&gt; \\| got 280" in text


def test_a_failure_is_listed_once_with_every_requirement_it_claims(tmp_path: Path, doc: Path) -> None:
    other = tmp_path / "other.md"
    other.write_text("# Other\n\n| ID | Assertion |\n|---|---|\n| B1 | listed |\n| B2 | capped |\n")
    run = write_results(tmp_path / "r.json", [record("S1", "failed", ["B1", "B2"])])
    assert trace(tmp_path, "--design", str(doc), str(other), "--results", str(run), "--format", "md")[0] == 0
    text = (tmp_path / "out" / "trace.md").read_text()
    assert "**Failing** (1):\n- ❌ **B1, B2** ← `S1` on twin / stub-workers: failed" in text


def test_the_stepgraph_command_finds_trace_through_its_entry_point(tmp_path: Path, doc: Path) -> None:
    import shutil
    import subprocess
    import sys

    stepgraph = shutil.which("stepgraph", path=str(Path(sys.executable).parent))
    if stepgraph is None:
        pytest.skip("the `stepgraph` console script is not installed next to this Python")
    truncated = tmp_path / "r.json"
    truncated.write_text('{"schema": "stepgraph-results/1", "run": {')
    done = subprocess.run([stepgraph, "trace", "--design", str(doc), "--results", str(truncated), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"stepgraph trace: {truncated}:1:43: results file is truncated — "
                                   "re-run the tests to write it again")


def test_failures_point_at_the_failing_step_with_step_detail(tmp_path: Path, doc: Path) -> None:
    failing = record("B1", "failed", line=7)
    failing["steps"] = [{"keyword": "Given", "name": "8 GPUs", "line": 8, "status": "passed", "duration_s": 0.0},
                        {"keyword": "Then", "name": "caps are 300", "line": 9, "status": "failed", "duration_s": 0.0,
                         "error": "AssertionError: 280 != 300"}]
    run = write_results(tmp_path / "r.json", [failing, record("B2")])
    _, result = trace(tmp_path, "--design", str(doc), "--results", str(run))
    row = next(r for r in result["documents"][0]["requirements"] if r["id"] == "B1")
    assert row["links"][0]["results"]["twin / stub-workers"]["where"] == "features/f.feature:9"
    assert "failed at `features/f.feature:9`" in (tmp_path / "out" / "trace.md").read_text()
    html = (tmp_path / "out" / "trace.html").read_text()
    assert "<b>Then</b> caps are 300" in html and "AssertionError: 280 != 300" in html
    passing = next(r for r in result["documents"][0]["requirements"] if r["id"] == "B2")
    assert "steps" not in passing["links"][0]["results"]["twin / stub-workers"]  # passing runs stay small


def test_unwritable_outputs_and_corrupt_locks_exit_2(tmp_path: Path, doc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_results(tmp_path / "r.json", [record("B1")])
    not_a_folder = tmp_path / "taken"
    not_a_folder.write_text("")
    assert main(["--design", str(doc), "--results", str(run), "--out", str(not_a_folder)]) == 2
    assert f"{not_a_folder}/trace.md:1:1: cannot write" in capsys.readouterr().err
    lock = tmp_path / "review.lock.json"
    lock.write_text('{"schema": ')
    assert trace(tmp_path, "--design", str(doc), "--results", str(run), "--lock", str(lock), "--update-lock")[0] == 2
    assert f"{lock}:1:12: review lock is not valid JSON" in capsys.readouterr().err
    assert lock.read_text() == '{"schema": '  # nothing overwritten


def test_an_expectation_whose_world_was_not_run_is_not_run_not_unmet(tmp_path: Path, doc: Path) -> None:
    run = write_results(tmp_path / "r.json", [record("B1")])
    expect = tmp_path / "expect.yaml"
    expect.write_text("- name: stub-workers\n  world: stub-workers\n  expect: {passed: 1}\n"
                      "- name: DCGM pass\n  world: path-b-dcgm\n  expect: {passed: 9, skipped: 3}\n")
    code, result = trace(tmp_path, "--design", str(doc), "--results", str(run), "--expect", str(expect), "--format", "json,md")
    assert [(e["name"], e["ran"], e["ok"]) for e in result["expectations"]] == [("stub-workers", True, True), ("DCGM pass", False, True)]
    assert code == 0  # one file declares every world; each run checks the worlds it ran
    assert "⚪ not run — DCGM pass: expected 9 passed / 3 skipped" in (tmp_path / "out" / "trace.md").read_text()


def test_a_base_that_is_not_a_folder_is_a_usage_error(tmp_path: Path, doc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_results(tmp_path / "r.json", [record("B1")])
    with pytest.raises(SystemExit) as exit_:
        trace(tmp_path, "--design", str(doc), "--results", str(run), "--base", str(tmp_path / "typo"))
    assert exit_.value.code == 2
    assert f"--base {tmp_path / 'typo'}: not a folder — name the folder" in capsys.readouterr().err
