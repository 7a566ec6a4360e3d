"""A trace's documents, lock and baseline read ahead of its results (as `stepgraph run` does
while its worlds run): used once, by the same arguments, and never once a file changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from factories import DOC, record, write_results

from stepgraph.dsl.reports.cli import ReadAhead, main


@pytest.fixture
def argv(tmp_path: Path) -> list[str]:
    (tmp_path / "plan.md").write_text(DOC)
    write_results(tmp_path / "base.json", [record("B1", "failed")], started="2026-11-29T05:00:00")
    return ["--design", str(tmp_path / "plan.md"), "--results", str(tmp_path / "r.json"),
            "--out", str(tmp_path / "out"), "--baseline", str(tmp_path / "base.json")]


def traced(tmp_path: Path, argv: list[str], ahead: ReadAhead) -> tuple[int, dict]:
    write_results(tmp_path / "r.json", [record("B1")], started="2026-11-30T05:00:00")
    code = main(argv, ahead=ahead)
    return code, json.loads((tmp_path / "out" / "trace.json").read_text())


def test_a_read_ahead_is_taken_once_and_only_by_the_same_arguments(argv: list[str]) -> None:
    ahead = ReadAhead(argv)
    assert ahead.take([*argv, "--only", "B*"]) is None
    ahead = ReadAhead(argv)
    docs, _, _, baseline = ahead.take(argv) or pytest.fail("not taken")
    assert [d.path for d in docs] == [argv[1]] and baseline is not None
    assert ahead.take(argv) is None


def test_the_trace_uses_what_was_read_ahead_while_its_files_are_the_same(tmp_path: Path, argv: list[str]) -> None:
    ahead = ReadAhead(argv)
    # The same file (inode, size, modification time) with other bytes: only a trace that took the
    # read-ahead still sees B1 failing in the baseline.
    base = tmp_path / "base.json"
    before = base.stat()
    base.write_text(base.read_text().replace('"B1"', '"B9"').replace("test_B1", "test_B9").replace("design:B1", "design:B9"))
    os.utime(base, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (base.stat().st_ino, base.stat().st_size) == (before.st_ino, before.st_size)
    code, result = traced(tmp_path, argv, ahead)
    assert code == 0
    assert [e["scenario"] for e in result["diff"]["fixed"]] == ["B1"]


@pytest.mark.parametrize("edited", ["plan.md", "base.json"])
def test_a_file_written_after_the_read_ahead_is_read_again(tmp_path: Path, argv: list[str], edited: str) -> None:
    ahead = ReadAhead(argv)
    if edited == "plan.md":
        (tmp_path / "plan.md").write_text(DOC.replace("| B2 | eight caps land |\n", ""))
    else:
        write_results(tmp_path / "base.json", [record("B1")], started="2026-11-29T05:00:00")
    _, result = traced(tmp_path, argv, ahead)
    if edited == "plan.md":
        assert "B2" not in [r["id"] for r in result["documents"][0]["requirements"]]
    else:
        assert result["diff"]["fixed"] == []


def test_a_file_that_does_not_read_ahead_is_reported_by_the_trace(tmp_path: Path, argv: list[str],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "base.json").write_text('{"schema": ')
    ahead = ReadAhead(argv)
    write_results(tmp_path / "r.json", [record("B1")])
    assert main(argv, ahead=ahead) == 2
    assert "base.json:1:12: results file is truncated" in capsys.readouterr().err
