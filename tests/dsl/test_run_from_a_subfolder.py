"""`stepgraph run PATH` takes PATH from the folder it is run in, like pytest does, also below the rootdir."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FEATURE = """\
Feature: Lists
  Scenario: A bound list matches another in any order
    Given the list "gpu-0, gpu-1" is bound as "assigned"
    And the list "gpu-1, gpu-0" is bound as "expected"
    Then "assigned" has the same elements as "expected"
"""


def test_a_path_given_in_a_subfolder_is_found(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nstepgraph_paths = scenarios\n")
    (tmp_path / "scenarios" / "demo").mkdir(parents=True)
    (tmp_path / "scenarios" / "demo" / "lists.feature").write_text(FEATURE)
    done = subprocess.run([sys.executable, "-m", "stepgraph.dsl.cli", "run", "demo/lists.feature", "--",
                           "--target", "local", "-q", "-p", "no:cacheprovider"],
                          cwd=tmp_path / "scenarios", capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
