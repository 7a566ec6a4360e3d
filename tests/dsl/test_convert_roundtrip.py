"""Converting between syntaxes keeps the IR identical; what Gherkin cannot say is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from dsl_vocabulary import messages
from test_loaders import B5_GHERKIN, B5_YAML, OUTLINE

from stepgraph.dsl import REGISTRY
from stepgraph.dsl.compiler import CompiledFile, compile_file
from stepgraph.dsl.render import RenderError, to_gherkin, to_yaml

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("source", "name"), [(B5_GHERKIN, "b5.feature"), (B5_YAML, "b5.yaml"), (OUTLINE, "outline.feature")])
def test_round_trip_through_both_syntaxes(compile_source: Callable[..., CompiledFile], source: str, name: str) -> None:
    original = compile_source(source, name)
    assert original.ok, messages(original)
    as_yaml = compile_source(to_yaml(original.feature), "converted.yaml")
    as_gherkin = compile_source(to_gherkin(original.feature), "converted.feature")
    assert as_yaml.ok and as_gherkin.ok, messages(as_yaml) + messages(as_gherkin)
    assert as_yaml.feature == original.feature
    assert as_gherkin.feature == original.feature
    again = compile_source(to_gherkin(as_yaml.feature), "again.feature")
    assert again.feature == original.feature


def test_yaml_groups_consecutive_checks_with_one_window(compile_source: Callable[..., CompiledFile]) -> None:
    text = to_yaml(compile_source(B5_GHERKIN, "b5.feature").feature)
    assert "      - expect:\n          within: 2 agent ticks\n          all:\n            - counter_delta:" in text
    assert "- power_limit: {gpu: $c0, equals: 200 W}" in text


def test_ir_differs_when_a_parameter_differs(compile_source: Callable[..., CompiledFile]) -> None:
    a = compile_source(B5_YAML, "a.yaml").feature
    b = compile_source(B5_YAML.replace("equals: 400 W", "equals: 401 W"), "b.yaml").feature
    c = compile_source(B5_YAML.replace("within: 2 ticks", "within: 3 ticks"), "c.yaml").feature
    assert a != b and a != c


@pytest.mark.parametrize("demo", sorted((REPO / "scenarios" / "demo").glob("*.*")), ids=lambda p: p.name)
def test_demo_scenarios_round_trip(demo: Path, tmp_path: Path) -> None:
    REGISTRY.load_entry_points()
    original = compile_file(demo, REGISTRY)
    assert original.ok, [str(d) for d in original.diagnostics]
    for name, text in (("x.yaml", to_yaml(original.feature)), ("x.feature", to_gherkin(original.feature))):
        (tmp_path / name).write_text(text)
        assert compile_file(tmp_path / name, REGISTRY).feature == original.feature


def test_a_name_gherkin_cannot_hold_is_refused(compile_source: Callable[..., CompiledFile]) -> None:
    compiled = compile_source('title: "two\\nlines"\nsteps:\n  - count: {count: 1}\n', "t.yaml")
    assert [str(d) for d in compiled.diagnostics] == [
        "t.yaml:1:8: `title` spans several lines — make it one line; put the rest under `description:`"
    ]
    assert compiled.feature is not None
    with pytest.raises(RenderError, match="names are one line in Gherkin"):  # the renderer's own guard stays
        to_gherkin(compiled.feature)


def test_descriptions_and_names_survive_both_ways(compile_source: Callable[..., CompiledFile]) -> None:
    text = "title: '  Spaced  '\ndescription: |\n  First line\n    indented second\n\n  after a gap\nsteps:\n  - count: {count: 1}\n"
    original = compile_source(text, "d.yaml")
    assert original.ok
    assert original.feature.scenarios[0].description == "First line\nindented second\n\nafter a gap"
    assert compile_source(to_gherkin(original.feature), "d.feature").feature == original.feature
    assert compile_source(to_yaml(original.feature), "e.yaml").feature == original.feature


def test_repeated_spaces_in_a_value_survive_both_ways(compile_source: Callable[..., CompiledFile]) -> None:
    gherkin = 'Feature: f\n  Scenario: s\n    When the manifest "two  spaces.yaml" is applied as "m"\n'
    original = compile_source(gherkin, "s.feature")
    assert original.ok, messages(original)
    assert original.feature.scenarios[0].steps[0].params.manifest == "two  spaces.yaml"
    assert '"two  spaces.yaml"' in to_gherkin(original.feature)
    as_yaml = compile_source(to_yaml(original.feature), "s.yaml")
    assert as_yaml.feature == original.feature
    assert compile_source(to_gherkin(as_yaml.feature), "again.feature").feature == original.feature


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (
            "named_thing: {what: two words, x: a}",
            "t.yaml:3:25: t.named_thing: parameter 'what' is 'two words', which its Gherkin phrase cannot write "
            "(a word: a letter or _, then letters, digits or _ . : / -) — write it as one word",
        ),
        (
            "baseline: {of: nvml, as: 'a b'}",
            "t.yaml:3:30: t.baseline: parameter 'as' is 'a b', which its Gherkin phrase cannot write "
            "(a binding name: a letter or _, then letters, digits or _) — write a name like gpu0",
        ),
        (
            "thing: {x: a}",
            "t.yaml:3:5: t.thing: its Gherkin form 'the thing \"a\" holds' also reads as t.named_thing — "
            "change a value so the step reads one way, or reword one of the phrases in its step library",
        ),
    ],
)
def test_a_yaml_value_its_gherkin_phrase_cannot_hold_is_refused(
    compile_source: Callable[..., CompiledFile], step: str, message: str
) -> None:
    """pytest-bdd runs the Gherkin a YAML file is written out as, and `convert` writes the same:
    a value that text cannot hold would make a step that does not parse, or parses as another."""
    compiled = compile_source(f"title: t\nsteps:\n  - {step}\n", "t.yaml")
    assert messages(compiled) == [message]


def test_a_list_item_the_quoted_list_cannot_hold_is_refused(tmp_path: Path) -> None:
    REGISTRY.load_entry_points()
    path = tmp_path / "l.yaml"
    path.write_text('title: t\nsteps:\n  - bind_list: {items: ["a, b", c], as: x}\n  - bind_list: {items: [a  b], as: y}\n')
    compiled = compile_file(path, REGISTRY, display="l.yaml")
    holds = "a quoted list of comma-separated items, none empty, none holding a comma or starting or ending with a space"
    assert [str(d) for d in compiled.diagnostics] == [
        f"l.yaml:3:24: common.bind_list: parameter 'items' is ['a, b', 'c'], which its Gherkin phrase cannot write ({holds})"
        " — split, join or trim the items"
    ]
