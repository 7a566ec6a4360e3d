"""Gherkin as QA write it: data tables, doc strings and `Rule:` blocks, each with its YAML
equivalent and an IR that `convert` keeps identical."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from dsl_vocabulary import add_attachment_steps, make_registry, messages

from stepgraph.dsl import Power, Registry
from stepgraph.dsl.compiler import CompiledFile, compile_file
from stepgraph.dsl.render import to_gherkin, to_yaml


@pytest.fixture
def registry() -> Registry:
    return add_attachment_steps(make_registry())


TABLE = """\
Feature: F
  Scenario: limits from a table
    Then the GPUs have these limits:
      | gpu | limit     |
      | 0   | 300 W     |
      | 1   | 250000 mW |
    And the note reads:
      \"\"\"
      line one
        indented | line
      \"\"\"
"""

TABLE_YAML = """\
title: limits from a table
steps:
  - limits:
      rows:
        - {gpu: 0, limit: 300 W}
        - {gpu: 1, limit: 250 W}
  - note: {text: "line one\\n  indented | line"}
"""


def test_a_data_table_and_a_doc_string_are_typed_parameters(compile_source: Callable[..., CompiledFile]) -> None:
    gherkin, yaml = compile_source(TABLE, "t.feature"), compile_source(TABLE_YAML, "t.yaml")
    assert gherkin.ok and yaml.ok, messages(gherkin) + messages(yaml)
    table, note = gherkin.feature.scenarios[0].steps
    assert [(row.gpu, row.limit) for row in table.params.rows] == [(0, Power(300_000)), (1, Power(250_000))]
    assert note.params.text == "line one\n  indented | line"
    assert gherkin.feature.scenarios == yaml.feature.scenarios


def test_tables_and_doc_strings_survive_conversion(compile_source: Callable[..., CompiledFile]) -> None:
    original = compile_source(TABLE, "t.feature").feature
    assert compile_source(to_yaml(original), "back.yaml").feature.scenarios == original.scenarios
    assert compile_source(to_gherkin(original), "back.feature").feature.scenarios == original.scenarios


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "    Then the GPUs have these limits:\n",
            "s.feature:3:5: t.limits_table needs a data table below the step (parameter 'rows')"
            " — write its rows under the step as `| column | column |` lines, the first row naming the columns",
        ),
        (
            "    Then there are 3 pods\n      | a |\n      | 1 |\n",
            "s.feature:3:5: t.count takes no data table — remove it; every parameter of this step is in its phrase",
        ),
        (
            '    Then the GPUs have these limits:\n      """\n      x\n      """\n',
            's.feature:3:5: t.limits_table takes a data table, not a doc string — write its rows under the step as'
            " `| column | column |` lines, the first row naming the columns",
        ),
        (
            "    Then the GPUs have these limits:\n      | gpu | limit |\n      | 0   | 300 V |\n",
            "s.feature:3:5: t.limits_table: parameter 'rows.0.limit': '300 V' is not a power — write it like 300 W or 300000 mW"
            " — got '300 V'",
        ),
    ],
)
def test_a_table_that_does_not_fit_is_an_error(compile_source: Callable[..., CompiledFile], text: str, expected: str) -> None:
    assert messages(compile_source("Feature: F\n  Scenario: S\n" + text)) == [expected]


RULES = """\
@design:8.5.7
Feature: F
  Background:
    Given a baseline of agent.counters as "c0"

  @slow
  Rule: conflicts fall back
    Background:
      Given a baseline of agent.pods as "p0"

    @id:R1
    Scenario: one
      Then there are 3 pods

    Scenario Outline: rows
      Then there are <n> pods

      @fast
      Examples:
        | n |
        | 4 |

  Rule: without a background
    @id:R2
    Scenario: two
      Then there are 5 pods
"""


def test_rules_have_their_own_background_and_tags(compile_source: Callable[..., CompiledFile]) -> None:
    compiled = compile_source(RULES, "r.feature")
    assert compiled.ok, messages(compiled)
    one, row, two = compiled.feature.scenarios
    assert [c.step_id for c in one.steps] == ["t.baseline", "t.count"] and one.rule == "conflicts fall back"
    assert one.tags.other == ("slow",) and one.tags.id == "R1"
    assert row.tags.other == ("slow", "fast") and [c.step_id for c in row.steps] == ["t.baseline", "t.count"]
    assert [c.step_id for c in two.steps] == ["t.count"] and two.tags.other == ()
    assert compile_source(to_yaml(compiled.feature), "r.yaml").feature == compiled.feature


def test_a_rule_without_scenarios_is_an_error(compile_source: Callable[..., CompiledFile]) -> None:
    text = "Feature: F\n  Scenario: S\n    Then there are 3 pods\n\n  Rule: empty\n"
    assert "s.feature:5:3: the Rule 'empty' has no scenarios — add a `Scenario:` under it" in messages(compile_source(text))


def test_outline_steps_substitute_table_cells_and_doc_strings(tmp_path: Path, registry: Registry) -> None:
    text = "Feature: F\n  Scenario Outline: O\n    Then the GPUs have these limits:\n      | gpu | limit |\n      | 0 | <w> W |\n"
    text += '    And the note reads:\n      """\n      <w> watts\n      """\n\n    Examples:\n      | w   |\n      | 300 |\n'
    path = tmp_path / "o.feature"
    path.write_text(text)
    [row] = compile_file(path, registry).feature.scenarios
    assert row.steps[0].params.rows[0].limit == Power(300_000) and row.steps[1].params.text == "300 watts"


def test_an_outline_placeholder_no_column_fills_is_an_error(compile_source: Callable[..., CompiledFile]) -> None:
    """Left unfilled, `"<pods>"` would run as the text `<pods>` and `<watt>` would read as an
    undefined step; both are the name of a column mistyped."""
    text = '''\
Feature: F
  Scenario Outline: O
    Given a baseline of agent.counters as "c0"
    Then the thing "<pods>" holds
    And the power limit of GPU "c0" is <watt>
    And the power limit of GPU "c0" is <watts>

    Examples:
      | pod | watts |
      | a   | 300 W |
      | b   | 310 W |
'''
    hint = "name one of the columns, or add the column to the Examples table"
    assert messages(compile_source(text)) == [
        f"s.feature:4:5: `<pods>` is not a column of this outline's Examples (columns: pod, watts) — {hint}",
        f"s.feature:5:5: `<watt>` is not a column of this outline's Examples (columns: pod, watts) — {hint}",
    ]
