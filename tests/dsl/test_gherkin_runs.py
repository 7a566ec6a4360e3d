"""Data tables, doc strings, rules and outline rows through pytest-bdd (pytester, runs in this
process): the step receives the typed table, rule backgrounds run, rows are selected by their own id
and named in plain ASCII."""

from __future__ import annotations

import textwrap

import pytest
from recording_library import RECORDING_LIBRARY

LIBRARY = RECORDING_LIBRARY + '''

class Text(Params):
    text: str


class Word(Params):
    word: str


@REGISTRY.then("rec.table", "the GPUs have these limits: {rows:table}", key="limits")
def table(ctx: StepContext, p: Rows) -> None:
    log("table " + ",".join(f"{r.gpu}={r.limit}" for r in p.rows))


@REGISTRY.then("rec.doc", "the note reads: {text:docstring}", key="note")
def doc(ctx: StepContext, p: Text) -> None:
    log("doc " + p.text.replace("\\n", "/"))


@REGISTRY.given("rec.say", "we say {word}", key="say")
def say(ctx: StepContext, p: Word) -> None:
    log("say " + p.word)
'''

FEATURE = '''\
Feature: QA Gherkin
  Background:
    Given we say "feature"

  Rule: with its own background
    Background:
      Given we say "rule"

    @id:T1
    Scenario: a table and a doc string
      Then the GPUs have these limits:
        | gpu | limit     |
        | 0   | 300 W     |
        | 1   | 250000 mW |
      And the note reads:
        """
        one
        two
        """

  Rule: outlines
    @id:O1
    Scenario Outline: rows
      Given we say "<caps>"

      @fast
      Examples:
        | caps       |
        | 325×3, 375 |
        | 300        |
'''


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeini("[pytest]\nstepgraph_paths = scenarios\n")
    pytester.makepyfile(reclib=LIBRARY, conftest="import reclib  # noqa: F401\n")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "qa.feature").write_text(textwrap.dedent(FEATURE))
    monkeypatch.setenv("REC_LOG", str(pytester.path / "rec.log"))
    (pytester.path / "rec.log").write_text("")
    return pytester


def log(pytester: pytest.Pytester) -> list[str]:
    return (pytester.path / "rec.log").read_text().splitlines()


def test_tables_doc_strings_and_rule_backgrounds_reach_the_steps(project: pytest.Pytester) -> None:
    result = project.runpytest_inprocess("--target", "local", "-k", "table", "--strict-markers")
    result.assert_outcomes(passed=1)
    assert log(project) == ["say feature", "say rule", "table 0=300 W,1=250 W", "doc one/two"]


def test_outline_rows_have_their_own_id_and_readable_names(project: pytest.Pytester) -> None:
    result = project.runpytest_inprocess("--target", "local", "-m", "id:O1.2", "-v", "--strict-markers")
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines(["*qa.feature::test_rows[[]O1.2[]] PASSED*"])
    assert log(project) == ["say feature", "say 300"]
    collected = project.runpytest_inprocess("--target", "local", "--collect-only", "-q", "-m", "fast")
    collected.stdout.fnmatch_lines(["*test_rows[[]O1.1[]]", "*test_rows[[]O1.2[]]"])
    assert "\\x" not in collected.stdout.str()
