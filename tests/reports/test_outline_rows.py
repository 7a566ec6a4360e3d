"""Each row of a Scenario Outline is reported as itself: its own id, its Examples' design links, its
line. The rows below share one name (no placeholder in it), so a report that found a row by its
name would show one row's facts for both."""

from __future__ import annotations

import json

import pytest

FEATURE = """\
Feature: Rows
  @id:O1 @design:P1
  Scenario Outline: A bound value reads back
    Given the value "<v>" is bound as "x"
    Then "x" is "<v>"

    @design:P2
    Examples:
      | v |
      | a |

    Examples:
      | v |
      | b |
"""


def test_each_row_is_reported_with_its_own_id_links_and_line(pytester: pytest.Pytester) -> None:
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "rows.feature").write_text(FEATURE)
    pytester.makeini("[pytest]\nstepgraph_paths = scenarios\n")
    result = pytester.runpytest_inprocess("--target", "local", "--stepgraph-results=results.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    records = json.loads((pytester.path / "results.json").read_text())["scenarios"]
    rows = sorted((r["id"], r["design"], r["line"], r["steps"][0]["name"]) for r in records)
    assert rows == [("O1.1", ["P1", "P2"], 10, 'the value "a" is bound as "x"'),
                    ("O1.2", ["P1"], 14, 'the value "b" is bound as "x"')]
