"""`stepgraph run PATH` takes PATH from the folder it is run in, like pytest does, also below the rootdir."""

from __future__ import annotations

from pathlib import Path

import pytest
from in_process_run import stepgraph_here

FEATURE = """\
Feature: Lists
  Scenario: A bound list matches another in any order
    Given the list "gpu-0, gpu-1" is bound as "assigned"
    And the list "gpu-1, gpu-0" is bound as "expected"
    Then "assigned" has the same elements as "expected"
"""


def test_a_path_given_in_a_subfolder_is_found(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nstepgraph_paths = scenarios\n")
    (tmp_path / "scenarios" / "demo").mkdir(parents=True)
    (tmp_path / "scenarios" / "demo" / "lists.feature").write_text(FEATURE)
    # The command in this process (with one world it runs pytest in its own process too), in the subfolder.
    monkeypatch.chdir(tmp_path / "scenarios")
    code = stepgraph_here(["run", "demo/lists.feature", "--", "--target", "local", "-q", "-p", "no:cacheprovider"])
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    assert "1 passed" in out.out
