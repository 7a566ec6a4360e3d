"""`throughout <duration>`: a check that must hold at every observation over a window, in both
syntaxes, on the target's clock."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from dsl_vocabulary import messages

from stepgraph.dsl import CheckFailed, Duration, ManualClock, ThroughoutBroken, throughout
from stepgraph.dsl.compiler import CompiledFile
from stepgraph.dsl.render import to_gherkin, to_yaml

GHERKIN = """\
Feature: F
  Scenario: neighbours never waver
    Given a baseline of agent.counters as "c0"
    Then throughout 2 agent ticks the power limit of GPU "c0" is 300 W
    And throughout 2 agent ticks there are 3 pods
    And within 30 s there are 4 pods
"""

YAML = """\
title: neighbours never waver
background: []
steps:
  - baseline: {of: agent.counters, as: c0}
  - expect:
      throughout: 2 ticks
      all:
        - power_limit: {gpu: $c0, equals: 300 W}
        - count: {count: 3}
  - expect: {within: 30 s, all: [count: {count: 4}]}
"""


def test_throughout_compiles_to_the_same_ir_from_both_syntaxes(compile_source: Callable[..., CompiledFile]) -> None:
    gherkin, yaml = compile_source(GHERKIN, "t.feature"), compile_source(YAML, "t.yaml")
    assert gherkin.ok and yaml.ok, messages(gherkin) + messages(yaml)
    assert gherkin.feature.scenarios == yaml.feature.scenarios
    steady = gherkin.feature.scenarios[0].steps[1]
    assert steady.throughout == Duration(2, "tick") and steady.within is None
    assert steady.text() == 'throughout 2 agent ticks the power limit of GPU "c0" is 300 W'


def test_throughout_survives_conversion_both_ways(compile_source: Callable[..., CompiledFile]) -> None:
    original = compile_source(GHERKIN, "t.feature").feature
    as_yaml = to_yaml(original)
    assert "throughout: 2 agent ticks" in as_yaml
    assert compile_source(as_yaml, "back.yaml").feature.scenarios == original.scenarios
    assert compile_source(to_gherkin(original), "back.feature").feature.scenarios == original.scenarios


def test_throughout_applies_to_checks_only(compile_source: Callable[..., CompiledFile]) -> None:
    compiled = compile_source('Feature: F\n  Scenario: S\n    When throughout 5 s the objects "x" are deleted\n')
    assert messages(compiled) == [
        "s.feature:3:5: `throughout` applies only to checks, and t.delete is a when-step — drop the `throughout` prefix"
    ]


def test_an_expect_block_takes_one_window(compile_source: Callable[..., CompiledFile]) -> None:
    text = "title: t\nsteps:\n  - expect: {within: 5 s, throughout: 5 s, all: [count: {count: 1}]}\n"
    assert any("both `within` and `throughout`" in m for m in messages(compile_source(text, "t.yaml")))


def test_throughout_observes_over_the_whole_window_and_returns_the_last_value() -> None:
    clock, seen = ManualClock(), []

    def steady() -> float:
        seen.append(clock.now())
        return clock.now()

    assert throughout(steady, duration=10, interval=4, clock=clock) == 10
    assert seen == [0, 4, 8, 10] and clock.now() == 10  # the window's start, every interval, and its end


def test_throughout_fails_at_the_first_observation_that_does_not_hold() -> None:
    clock = ManualClock()

    def wavers() -> None:
        if clock.now() >= 6:
            raise CheckFailed("GPU 3 limit", expected="300 W", observed="280 W")

    with pytest.raises(ThroughoutBroken) as info:
        throughout(wavers, duration=30, interval=2, clock=clock, description="neighbours hold")
    assert clock.now() == 6  # stops at once: the rest of the window cannot make it hold
    assert "neighbours hold: stopped holding after 6 s of 30 s (observation 4)" in str(info.value)
    assert "expected: 300 W" in str(info.value) and "observed: 280 W" in str(info.value)


def test_throughout_does_not_swallow_bugs() -> None:
    with pytest.raises(ZeroDivisionError):
        throughout(lambda: 1 / 0, duration=5, clock=ManualClock())
