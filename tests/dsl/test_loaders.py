"""Loaders: Gherkin and YAML → the same IR, with positions; syntax problems as file:line:col."""

from __future__ import annotations

from collections.abc import Callable

from dsl_vocabulary import messages

from stepgraph.dsl import Duration, Power, Ref
from stepgraph.dsl.compiler import CompiledFile
from stepgraph.dsl.diagnostics import Location

B5_GHERKIN = """\
@design:8.5.7
Feature: Power Agent multi-pod conflict
  Background:
    Given a baseline of agent.counters as "c0"

  @id:B5 @needs:nvml
  Scenario: Conflict falls back to the safe default on the assigned GPU only
    When the manifest "examples/40-bystander.yaml" is applied as "bystander"
    Then within 2 agent ticks the counter "multi_pod_gpu_total{disposition=conflict}" grew by at least 1 since "c0"
    And within 2 agent ticks the power limit of GPU "c0" is 200 W
    When the objects "bystander" are deleted
    Then the power limit of GPU "c0" is 400000 mW
"""

B5_YAML = """\
feature: Power Agent multi-pod conflict
design: ["8.5.7"]
background:
  - baseline: {of: agent.counters, as: c0}
scenarios:
  - title: Conflict falls back to the safe default on the assigned GPU only
    id: B5
    needs: [nvml]
    steps:
      - apply: {manifest: examples/40-bystander.yaml, as: bystander}
      - expect:
          within: 2 ticks
          all:
            - counter_delta: {metric: "multi_pod_gpu_total{disposition=conflict}", since: c0, at_least: 1}
            - power_limit: {gpu: $c0, equals: 200 W}
      - delete: {ref: $bystander}
      - power_limit: {gpu: $c0, equals: 400 W}
"""


def test_b5_compiles_to_the_same_ir_from_both_syntaxes(compile_source: Callable[..., CompiledFile]) -> None:
    gherkin = compile_source(B5_GHERKIN, "b5.feature")
    yaml = compile_source(B5_YAML, "b5.yaml")
    assert gherkin.ok and yaml.ok, messages(gherkin) + messages(yaml)
    assert gherkin.feature == yaml.feature
    [scenario] = gherkin.feature.scenarios
    assert gherkin.feature.scenario_id(scenario) == "B5"
    assert gherkin.feature.design_ids(scenario) == ("8.5.7",)
    assert gherkin.feature.needs(scenario) == {"nvml", "k8s", "k8s-write"}
    check = scenario.steps[1]
    assert check.step_id == "t.counter_delta" and check.within == Duration(2, "tick") and check.params.since == Ref("c0")
    assert scenario.steps[2].params.equals == Power(200_000)


def test_every_step_keeps_its_source_position(compile_source: Callable[..., CompiledFile]) -> None:
    gherkin = compile_source(B5_GHERKIN, "b5.feature").feature
    yaml = compile_source(B5_YAML, "b5.yaml").feature
    assert gherkin.background[0].location == Location("b5.feature", 4, 5)
    assert [c.location.line for c in gherkin.scenarios[0].steps] == [8, 9, 10, 11, 12]
    assert yaml.background[0].location == Location("b5.yaml", 4, 5)
    assert [c.location for c in yaml.scenarios[0].steps] == [
        Location("b5.yaml", 10, 9),
        Location("b5.yaml", 14, 15),
        Location("b5.yaml", 15, 15),
        Location("b5.yaml", 16, 9),
        Location("b5.yaml", 17, 9),
    ]
    assert yaml.scenarios[0].location == Location("b5.yaml", 6, 5)


def test_short_yaml_form_is_one_scenario(compile_source: Callable[..., CompiledFile]) -> None:
    compiled = compile_source("title: Just one\nid: X1\nsteps:\n  - baseline: {of: caps, as: c}\n  - count: {count: 2}\n", "one.yaml")
    assert compiled.ok, messages(compiled)
    assert compiled.feature.name == "Just one" and compiled.feature.scenarios[0].tags.id == "X1"


def test_gherkin_syntax_error_has_its_position(compile_source: Callable[..., CompiledFile]) -> None:
    compiled = compile_source('Feature: F\n  Scenario: S\n    Given a baseline of x as "c"\n  Oops this is not a step\n')
    [message] = messages(compiled)
    assert message.startswith("s.feature:4:3: Gherkin syntax: expected: #EOF, ")
    assert message.endswith("got 'Oops this is not a step' — fix the keyword or indentation at that line")


def test_gherkin_without_feature_or_scenarios(compile_source: Callable[..., CompiledFile]) -> None:
    assert messages(compile_source("# nothing\n")) == ["s.feature:1:1: no Feature in this file — start it with `Feature: <name>`"]
    assert messages(compile_source("Feature: F\n")) == ["s.feature:1:1: the feature has no scenarios — add a `Scenario:`"]


def test_a_table_under_a_step_that_takes_none_is_named_and_rules_compile(compile_source: Callable[..., CompiledFile]) -> None:
    text = "Feature: F\n  Scenario: S\n    Then there are 3 pods\n      | a |\n  Rule: R\n    Scenario: T\n      Then there are 3 pods\n"
    assert messages(compile_source(text)) == [
        "s.feature:3:5: t.count takes no data table — remove it; every parameter of this step is in its phrase",
    ]


OUTLINE = """\
Feature: F
  @id:O1
  Scenario Outline: Pods per world
    Given a baseline of <what> as "b"
    Then there are <count> pods

    @fast
    Examples:
      | what     | count |
      | counters | 3     |
      | caps     | 5     |
"""


def test_an_outline_expands_to_one_scenario_per_row(compile_source: Callable[..., CompiledFile]) -> None:
    compiled = compile_source(OUTLINE)
    assert compiled.ok, messages(compiled)
    first, second = compiled.feature.scenarios
    assert (first.name, second.name) == ("Pods per world [counters-3]", "Pods per world [caps-5]")
    assert first.outline == second.outline == "Pods per world"
    assert first.tags.other == ("fast",) and (first.tags.id, second.tags.id) == ("O1.1", "O1.2")
    assert [c.params.count for c in (first.steps[1], second.steps[1])] == [3, 5]
    assert first.location.line == 10 and first.steps[1].location.line == 5


def test_outline_rows_are_checked_one_by_one(compile_source: Callable[..., CompiledFile]) -> None:
    compiled = compile_source(OUTLINE.replace("| caps     | 5     |", "| caps     | five  |"))
    assert messages(compiled) == [
        "s.feature:5:5: undefined step: 'there are five pods' — closest step: t.count — 'there are {count:int} pods'"
    ]
    assert messages(compile_source("Feature: F\n  Scenario Outline: O\n    Then there are <n> pods\n    Examples:\n      | n |\n")) == [
        "s.feature:2:3: the Scenario Outline has no example rows — add rows under `Examples:`"
    ]


def test_two_ids_on_one_scenario_are_an_error(compile_source: Callable[..., CompiledFile]) -> None:
    compiled = compile_source("Feature: F\n  @id:A1 @id:A2\n  Scenario: S\n    Then there are 3 pods\n")
    assert messages(compiled) == ["s.feature:2:3: more than one id: A1, A2 — give each scenario one @id"]
