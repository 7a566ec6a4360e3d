"""Checks judged together in one window (`expect … together`, `… all of these hold together:`):
one IR node from both syntaxes, kept through convert, static check 8 on the joint window, every
misuse an error at its line, and the executor's joint semantics on a virtual clock."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from dsl_vocabulary import messages

from stepgraph.dsl import (
    Bindings,
    CheckFailed,
    Duration,
    EventuallyTimeout,
    FinalizerStack,
    ManualClock,
    Params,
    Ref,
    Registry,
    Session,
    StepContext,
    ThroughoutBroken,
)
from stepgraph.dsl.compiler import CompiledFile
from stepgraph.dsl.execute import execute_call, execute_joint
from stepgraph.dsl.graph import build_graph
from stepgraph.dsl.ir import JointCheck, StepCall
from stepgraph.dsl.phrases import Window
from stepgraph.dsl.render import to_gherkin, to_yaml

GHERKIN = '''\
Feature: F
  Scenario: S
    Given a baseline of agent.counters as "c0"
    Then within 2 agent ticks all of these hold together:
      """
      the counter "x_total" grew by at least 1 since "c0"
      the power limit of GPU "c0" is 300 W
      """
    And throughout 30 s, all of these hold together
      """
      there are 3 pods
      """
'''

YAML = """\
title: S
steps:
  - baseline: {of: agent.counters, as: c0}
  - expect:
      within: 2 ticks
      together:
        - counter_delta: {metric: x_total, since: $c0}
        - power_limit: {gpu: $c0, equals: 300000 mW}
  - expect: {throughout: 30 s, together: [count: {count: 3}]}
"""


def test_both_syntaxes_give_one_joint_node(compile_source: Callable[..., CompiledFile]) -> None:
    gherkin, yaml = compile_source(GHERKIN, "s.feature"), compile_source(YAML, "s.yaml")
    assert gherkin.ok and yaml.ok, messages(gherkin) + messages(yaml)
    assert gherkin.feature.scenarios == yaml.feature.scenarios
    joint = gherkin.feature.scenarios[0].steps[1]
    assert isinstance(joint, JointCheck)
    assert joint.window == Window("within", Duration(2, "tick"))
    assert [c.step_id for c in joint.checks] == ["t.counter_delta", "t.power_limit"]
    assert all(c.window is None for c in joint.checks)  # the group's window, not theirs
    assert [str(c.location) for c in joint.checks] == ["s.feature:6:7", "s.feature:7:7"]  # each check's own line
    assert [str(c.location) for c in yaml.feature.scenarios[0].steps[1].checks] == ["s.yaml:7:11", "s.yaml:8:11"]


def test_a_joint_window_is_not_checks_in_turn(compile_source: Callable[..., CompiledFile]) -> None:
    in_turn = compile_source(YAML.replace("together:", "all:"), "t.yaml")
    assert in_turn.ok and in_turn.feature.scenarios != compile_source(YAML, "s.yaml").feature.scenarios


def test_convert_keeps_the_ir_both_ways(compile_source: Callable[..., CompiledFile]) -> None:
    original = compile_source(GHERKIN, "s.feature").feature
    as_yaml = to_yaml(original)
    assert "      - expect:\n          within: 2 agent ticks\n          together:\n            - counter_delta:" in as_yaml
    assert compile_source(as_yaml, "back.yaml").feature == original
    from_yaml = compile_source(YAML, "s.yaml").feature
    as_gherkin = to_gherkin(from_yaml)
    assert '    Then within 2 agent ticks all of these hold together:\n      """\n      the counter "x_total"' in as_gherkin
    assert compile_source(as_gherkin, "back.feature").feature == from_yaml
    assert compile_source(to_yaml(from_yaml), "again.yaml").feature == from_yaml


def test_the_graph_shows_each_check_with_its_group(compile_source: Callable[..., CompiledFile]) -> None:
    feature = compile_source(GHERKIN, "s.feature").feature
    nodes = build_graph(feature, feature.scenarios[0]).nodes
    assert [(n.step, n.within, n.throughout, n.together) for n in nodes] == [
        ("t.baseline", None, None, None),
        ("t.counter_delta", "2 agent ticks", None, "n1"),
        ("t.power_limit", "2 agent ticks", None, "n1"),
        ("t.count", None, "30 s", "n3"),
    ]


def test_static_check_8_applies_to_the_joint_window(compile_source: Callable[..., CompiledFile]) -> None:
    short = compile_source(GHERKIN.replace("within 2 agent ticks", "within 10 s"), "s.feature")
    assert messages(short) == [
        "s.feature:6:7: within 10 s (the joint window) is shorter than t.counter_delta can settle (1 agent tick) "
        "— wait at least within 1 agent tick"
    ]
    short_yaml = compile_source(YAML.replace("within: 2 ticks", "within: 10 s"), "s.yaml")
    assert messages(short_yaml) == [
        "s.yaml:7:11: within 10 s (the joint window) is shorter than t.counter_delta can settle (1 agent tick) "
        "— wait at least within 1 agent tick"
    ]


def test_what_a_joint_check_cannot_hold_is_an_error_at_its_line(compile_source: Callable[..., CompiledFile]) -> None:
    text = '''\
Feature: F
  Scenario: S
    Given a baseline of agent.counters as "c0"
    Then within 2 agent ticks all of these hold together:
      """
      within 2 s the power limit of GPU "c0" is 300 W
      the objects "c0" are deleted
      there are "3" pods
      """
    Then within 2 s all of these hold together:
    Then throughout 2 s all of these hold together:
      | there are 3 pods |
    Then within 2000 min all of these hold together:
      """
      there are 3 pods
      """
'''
    assert messages(compile_source(text)) == [
        "s.feature:6:7: a check judged together takes the group's window, not a `within` of its own — remove `within 2 s`",
        "s.feature:7:7: t.delete is a when-step, and only checks are judged together — move it before or after the group",
        "s.feature:8:7: undefined step: 'there are \"3\" pods' — closest step: t.count — 'there are {count:int} pods'",
        "s.feature:10:5: `within 2 s all of these hold together:` has nothing below it — "
        'write its checks below it between two `"""` lines, one check per line',
        "s.feature:11:5: `throughout 2 s all of these hold together:` has a data table below it — "
        'write its checks below it between two `"""` lines, one check per line',
        "s.feature:13:5: `within`: 120000 s is longer than a test can wait — at most 86400 s (a day), 10000 agent ticks "
        "or 1440 planner ticks",
    ]


def test_what_a_yaml_expect_cannot_combine_is_an_error_at_its_line(compile_source: Callable[..., CompiledFile]) -> None:
    text = """\
title: t
steps:
  - baseline: {of: a, as: c0}
  - expect: {together: [count: {count: 1}]}
  - expect: {within: 5 s, all: [count: {count: 1}], together: [count: {count: 1}]}
  - expect: {within: 5 s, together: [expect: {all: [count: {count: 1}]}, delete: {ref: $c0}]}
  - expect: {within: 5 s}
  - expect: {within: 5 s, together: [limits: {rows: []}]}
"""
    assert messages(compile_source(text, "t.yaml")) == [
        "t.yaml:4:5: `together` needs a window — add `within: <duration>` (all hold at one observation) "
        "or `throughout: <duration>` (all hold at every observation)",
        "t.yaml:5:5: `expect` has both `all` and `together` — give it one: `all` (each check in its own window, in turn) "
        "or `together` (one joint window)",
        "t.yaml:6:38: `expect` cannot nest — flatten it",
        "t.yaml:6:74: t.delete is a when-step, and only checks are judged together — move it before or after the group",
        "t.yaml:7:5: `expect` lists no checks — list them under `all` (each comes to hold in turn) or `together` (all hold at once)",
        "t.yaml:8:38: unknown step 'limits' — run `stepgraph steps` to list the steps",
    ]


def test_a_check_that_takes_a_table_is_not_judged_together(registry: Registry, compile_source: Callable[..., CompiledFile]) -> None:
    from dsl_vocabulary import add_attachment_steps

    add_attachment_steps(registry)
    yaml = compile_source("title: t\nsteps:\n  - expect: {within: 5 s, together: [note: {text: hi}]}\n", "t.yaml")
    gherkin = compile_source('Feature: F\n  Scenario: S\n    Then within 5 s all of these hold together:\n      """\n'
                             '      the note reads:\n      """\n')
    assert messages(yaml) == [
        "t.yaml:3:38: t.note takes a doc string, which a check judged together cannot carry — check it in a step of its own"
    ]
    assert messages(gherkin) == [
        "s.feature:5:7: t.note takes a doc string, which a check judged together cannot carry — check it in a step of its own"
    ]


# -- the executor, on a virtual clock ------------------------------------------------------------


class NoParams(Params):
    pass


def _world() -> tuple[ManualClock, Registry, StepContext]:
    """Check `early` holds before 10 s, `late` from 15 s on: each holds at some moment, never both."""
    clock, reg = ManualClock(), Registry()

    @reg.then("w.early", "the early state holds")
    def early(ctx: StepContext, p: NoParams) -> str:
        if clock.now() >= 10:
            raise CheckFailed("early state", expected="before 10 s", observed=clock.now())
        return "early"

    @reg.then("w.late", "the late state holds")
    def late(ctx: StepContext, p: NoParams) -> str:
        if clock.now() < 15:
            raise CheckFailed("late state", expected="from 15 s", observed=clock.now())
        return "late"

    @reg.then("w.steady", "the steady state holds")
    def steady(ctx: StepContext, p: NoParams) -> str:
        return "steady"

    ctx = StepContext(session=Session(clock=clock, tick_seconds=15), bindings=Bindings(), finalizers=FinalizerStack())
    return clock, reg, ctx


def _call(reg: Registry, step_id: str, bind_as: str | None = None) -> StepCall:
    return StepCall(decl=reg.steps[step_id], step_id=step_id, params=NoParams(), bind_as=bind_as)


def test_checks_holding_at_different_moments_pass_in_turn() -> None:
    clock, reg, ctx = _world()
    execute_call(reg.steps["w.early"], NoParams(), ctx, within=Duration(30, "s"))
    execute_call(reg.steps["w.late"], NoParams(), ctx, within=Duration(30, "s"))
    assert clock.now() == 15


def test_checks_holding_at_different_moments_fail_together() -> None:
    clock, reg, ctx = _world()
    joint = JointCheck(Window("within", Duration(30, "s")), (_call(reg, "w.early"), _call(reg, "w.late")))
    with pytest.raises(EventuallyTimeout) as info:
        execute_joint(joint, [ctx, ctx])
    assert clock.now() == 30  # the whole window: they might still have come to hold together
    text = str(info.value)
    assert "2 checks together within 30 s: still failing after 30 s (31 attempts)" in text
    assert "1 of the 2 checks judged together did not hold at +30 s" in text
    assert "✗ w.early (<memory>:1:1): early state — it held at +0 s, when the others did not all hold" in text
    assert "✓ w.late (<memory>:1:1) held" in text


def test_checks_holding_at_one_moment_pass_together_and_bind_from_it() -> None:
    clock, reg, ctx = _world()
    clock.sleep(12)  # early no longer holds, late not yet: they hold together at no moment from here
    joint = JointCheck(Window("within", Duration(30, "s")), (_call(reg, "w.steady", "a"), _call(reg, "w.late", "b")))
    assert execute_joint(joint, [ctx, ctx]) == ["steady", "late"]
    assert clock.now() == 15 and ctx.bindings.resolve([Ref("a"), Ref("b")]) == ["steady", "late"]


def test_throughout_together_fails_at_the_first_observation_where_one_does_not_hold() -> None:
    clock, reg, ctx = _world()
    joint = JointCheck(Window("throughout", Duration(30, "s")), (_call(reg, "w.steady"), _call(reg, "w.early")))
    with pytest.raises(ThroughoutBroken) as info:
        execute_joint(joint, [ctx, ctx])
    assert clock.now() == 10
    assert "2 checks together throughout 30 s: stopped holding after 10 s of 30 s (observation 11)" in str(info.value)


def test_throughout_together_holds_over_the_whole_window() -> None:
    clock, reg, ctx = _world()
    clock.sleep(15)
    joint = JointCheck(Window("throughout", Duration(2, "tick")), (_call(reg, "w.steady"), _call(reg, "w.late")))
    assert execute_joint(joint, [ctx, ctx]) == ["steady", "late"] and clock.now() == 45


def test_a_bug_in_a_joint_check_is_not_retried() -> None:
    clock, reg, ctx = _world()

    @reg.then("w.bug", "the buggy check holds")
    def bug(ctx: StepContext, p: NoParams) -> None:
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        execute_joint(JointCheck(Window("within", Duration(30, "s")), (_call(reg, "w.steady"), _call(reg, "w.bug"))), [ctx, ctx])
    assert clock.now() == 0


def test_the_language_docs_joint_example_is_one_ir_in_both_syntaxes() -> None:
    """The Gherkin and YAML examples of language.md say the same (each also lints clean, in
    test_doc_examples)."""
    import re
    from pathlib import Path

    from stepgraph.dsl import REGISTRY
    from stepgraph.dsl.compiler import compile_text

    REGISTRY.load_entry_points()
    text = (Path(__file__).parents[2] / "docs" / "design" / "language.md").read_text(encoding="utf-8")
    blocks = {
        syntax: "\n".join(line[len(indent) :] for line in body.splitlines()) + "\n"
        for indent, syntax, body in re.findall(r"^( *)```(gherkin|yaml)\n(.*?)^\1```", text, re.S | re.M)
        if "all of these hold together:" in body or "together:" in body
    }
    gherkin = compile_text(blocks["gherkin"], Path("x.feature"), "x.feature", REGISTRY).feature
    yaml = compile_text(blocks["yaml"], Path("x.yaml"), "x.yaml", REGISTRY).feature
    assert gherkin is not None and yaml is not None
    assert any(isinstance(step, JointCheck) for step in gherkin.scenarios[0].steps)
    assert gherkin.background + gherkin.scenarios[0].steps == yaml.background + yaml.scenarios[0].steps
    assert gherkin.needs(gherkin.scenarios[0]) == yaml.needs(yaml.scenarios[0])
