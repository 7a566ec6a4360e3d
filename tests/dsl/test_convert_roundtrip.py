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
