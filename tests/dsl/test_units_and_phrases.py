"""Units as types and canonical phrases: parse, compare, render back."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from dsl_vocabulary import messages
from pydantic import ValidationError

from stepgraph.dsl import Duration, Params, Power, Ref, Registry
from stepgraph.dsl.compiler import CompiledFile
from stepgraph.dsl.phrases import Phrase, Window, split_window


@pytest.mark.parametrize(
    ("text", "mw"), [("300 W", 300_000), ("300000 mW", 300_000), ("0.3 kW", 300_000), ("250.5W", 250_500), (300, 300_000)]
)
def test_power_normalises_to_milliwatts(text: object, mw: int) -> None:
    assert Power.parse(text).milliwatts == mw


def test_power_renders_canonically() -> None:
    assert str(Power.parse("300000 mW")) == "300 W"
    assert str(Power.parse("250.5 W")) == "250500 mW"


@pytest.mark.parametrize("bad", ["300", "300 V", "W", "", True, None, "-5 W"])
def test_power_refuses_non_powers(bad: object) -> None:
    with pytest.raises(ValueError, match="is not a power"):
        Power.parse(bad)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90 s", 90), ("90s", 90), ("1.5 min", 90), ("500 ms", 0.5), ("2 ticks", 30), ("1 agent tick", 15), ("2 agent ticks", 30), (12, 12)],
)
def test_durations_in_seconds_or_ticks(text: object, seconds: float) -> None:
    assert Duration.parse(text).to_seconds(tick_seconds=15) == pytest.approx(seconds)


def test_tick_durations_follow_the_targets_tick_length() -> None:
    assert Duration.parse("2 ticks").to_seconds(tick_seconds=5) == 10
    assert str(Duration.parse("1 tick")) == "1 agent tick" and str(Duration.parse("2 ticks")) == "2 agent ticks"
    assert str(Duration.parse("1.5 min")) == "90 s"


def test_units_validate_inside_models_and_say_what_to_write() -> None:
    class Wait(Params):
        limit: Power
        within: Duration

    assert Wait.model_validate({"limit": "200 W", "within": "1 tick"}).limit == Power(200_000)
    with pytest.raises(ValidationError, match="write it like 90 s"):
        Wait.model_validate({"limit": "200 W", "within": "soon"})


def test_phrase_parses_typed_placeholders_and_renders_back() -> None:
    phrase = Phrase("the counter {metric} grew by at least {n:int} since {since:ref}")
    raw = phrase.match('the counter "a{b=\\"c\\"}"   grew by at least 3 since "c0"')
    assert raw == {"metric": 'a{b="c"}', "n": 3, "since": Ref("c0")}
    assert phrase.render(raw) == 'the counter "a{b=\\"c\\"}" grew by at least 3 since "c0"'
    assert phrase.match("the counter grew") is None


def test_a_phrase_reads_its_text_however_spaced_and_only_its_own() -> None:
    phrase = Phrase('the label "team  a" of {name} is {value}')
    assert phrase.match('the   label "team  a"  of "p1" is "x"') == {"name": "p1", "value": "x"}
    assert phrase.match('a label "team  a" of "p1" is "x"') is None
    assert Phrase("{name} is ready").match('"p1"   is ready') == {"name": "p1"}


def test_within_prefix_is_split_off() -> None:
    assert split_window("within 2 agent ticks the thing holds") == (Window("within", Duration(2, "tick")), "the thing holds")
    assert split_window("throughout 30 s the thing holds") == (Window("throughout", Duration(30)), "the thing holds")
    assert split_window("the thing holds") == (None, "the thing holds")


def test_registry_matches_within_only_for_checks() -> None:
    reg = Registry()
    reg.then("demo.holds", "the thing holds")(lambda ctx, p: None)
    reg.when("demo.acts", "the thing acts")(lambda ctx, p: None)
    [m] = reg.match("within 3 s the thing holds")
    assert m.decl.id == "demo.holds" and m.window == Window("within", Duration(3, "s"))
    assert reg.match("within 3 s the thing acts") == []


@pytest.mark.parametrize(
    ("kind", "text", "hint"),
    [
        (Duration, "2 tiks", "did you mean 'ticks'?"),
        (Duration, "1 h", "write hours in minutes, e.g. 60 min"),
        (Duration, "3 W", "that is a power, and this takes a duration"),
        (Power, "300 w", "did you mean 'W'?"),
        (Power, "2 s", "that is a duration, and this takes a power"),
    ],
)
def test_a_wrong_unit_suggests_the_right_one(kind: type, text: str, hint: str) -> None:
    with pytest.raises(ValueError) as error:
        kind.parse(text)
    assert hint in str(error.value)


def test_planner_ticks_become_seconds_on_the_target() -> None:
    assert Duration.parse("2 planner ticks").to_seconds(15, 30) == 60 and str(Duration.parse("1 planner tick")) == "1 planner tick"


def test_a_misspelt_unit_in_gherkin_says_which_was_meant(compile_source: Callable[..., CompiledFile]) -> None:
    """The exact phrase does not match a wrong unit, so the step reads as undefined; the unit's
    own message says what was meant instead."""
    text = '''\
Feature: F
  Scenario: S
    Given a baseline of agent.counters as "c0"
    Then the power limit of GPU "c0" is 300 w
    Then within 2 tiks the power limit of GPU "c0" is 300 W
    Then throughout 2 agent tiks the power limit of GPU "c0" is 300 W
    Then within 1 h all of these hold together:
      """
      the power limit of GPU "c0" is 300 W
      """
'''
    durations = "Durations are written like 90 s, 500 ms, 2 min, 2 agent ticks or 1 planner tick"
    assert messages(compile_source(text)) == [
        "s.feature:4:5: t.power_limit: parameter 'equals': '300 w' is not a power — did you mean 'W'? Write it like 300 W or 300000 mW",
        f"s.feature:5:5: `within`: '2 tiks' is not a duration — did you mean 'ticks'? {durations}",
        f"s.feature:6:5: `throughout`: '2 agent tiks' is not a duration — did you mean 'agent ticks'? {durations}",
        "s.feature:7:5: `within`: '1 h' is not a duration — write hours in minutes, e.g. 60 min",
    ]


def test_a_misspelt_window_unit_in_yaml_says_which_was_meant(compile_source: Callable[..., CompiledFile]) -> None:
    text = "title: t\nsteps:\n  - expect: {within: 2 tiks, all: [count: {count: 1}]}\n"
    assert messages(compile_source(text, "t.yaml")) == [
        "t.yaml:3:22: `within`: '2 tiks' is not a duration — did you mean 'ticks'? "
        "Durations are written like 90 s, 500 ms, 2 min, 2 agent ticks or 1 planner tick"
    ]
