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


def test_a_quoted_part_of_a_phrase_reads_any_spacing_between_its_words() -> None:
    # Outside quotes a text's whitespace is squeezed to single spaces; inside, it is kept.
    phrase = Phrase('the note "a b c d" is on {name}')
    assert phrase.match('the \t note  "a  b c\td"   is on "p1"') == {"name": "p1"}
    assert phrase.match('the note "a b c d e" is on "p1"') is None
    assert Phrase('a "b c" {x}').match('a "b   c""y"') == {"x": "y"}


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


class _Name(Params):
    name: str


def _overlapping() -> Registry:
    """Phrases that share first words, begin with a placeholder, or run a word into one."""
    reg = Registry()
    noop = lambda ctx, p: None  # noqa: E731
    reg.then("demo.go", "go {name}", params=_Name)(noop)
    reg.then("demo.go_far", "go far {name}", params=_Name)(noop)
    reg.then("demo.is_ready", "{name} is ready", params=_Name)(noop)
    reg.then("demo.the_thing", "the thing {name} holds", params=_Name)(noop)
    reg.then("demo.the_other", "the {name} holds", params=_Name)(noop)
    reg.then("demo.ready", "ready")(noop)
    return reg


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ('go "a"', ["demo.go"]),
        ('go"a"', ["demo.go"]),  # the word runs into the placeholder's text
        ('go far "a"', ["demo.go_far"]),
        ('"a" is ready', ["demo.is_ready"]),
        ('the thing "a" holds', ["demo.the_thing"]),
        ('the  "a"  holds', ["demo.the_other"]),
        ("ready", ["demo.ready"]),
        ('within 3 s go"a"', ["demo.go"]),
        ('throughout 3 s, "a" is ready', ["demo.is_ready"]),
        ('the thing "a" is ready', []),
    ],
)
def test_registry_reads_each_text_with_every_phrase_that_can(text: str, ids: list[str]) -> None:
    assert [m.decl.id for m in _overlapping().match(text)] == ids


def test_registry_matches_in_the_order_steps_were_added_and_forgets_removed_ones() -> None:
    reg = Registry()
    noop = lambda ctx, p: None  # noqa: E731
    reg.then("demo.b_the", "the {name} holds", params=_Name)(noop)
    saved = reg.snapshot()
    reg.then("demo.c_two", "the thing {name:word}", params=_Name)(noop)  # keyed by two words
    reg.then("demo.a_any", "{name:word} thing holds", params=_Name)(noop)  # keyed by none
    assert [m.decl.id for m in reg.match("the thing holds")] == ["demo.c_two", "demo.a_any"]
    assert reg.remove("demo.c_two").id == "demo.c_two" and "c_two" not in reg.by_key
    assert [m.decl.id for m in reg.match("the thing holds")] == ["demo.a_any"]
    assert [m.decl.id for m in reg.match('the "x" holds')] == ["demo.b_the"]
    reg.restore(saved)
    assert sorted(reg.steps) == ["demo.b_the"] and sorted(reg.by_key) == ["b_the"]
    assert reg.match("the thing holds") == []
    reg.then("demo.a_any", "{name:word} thing holds", params=_Name)(noop)  # its id, key and phrase are free again
    assert [m.decl.id for m in reg.match("the thing holds")] == ["demo.a_any"]


def test_registry_declarations_change_only_through_its_methods() -> None:
    reg = _overlapping()
    with pytest.raises(TypeError):
        reg.steps["demo.x"] = reg.steps["demo.go"]  # type: ignore[index]
    with pytest.raises(TypeError):
        del reg.by_key["go"]  # type: ignore[attr-defined]


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
