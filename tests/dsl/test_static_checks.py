"""Static checks 2–6 and 9, each with an input that trips it: exact message and position."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dsl_vocabulary import make_registry, messages

from stepgraph.dsl.compiler import CompiledFile, compile_paths
from stepgraph.dsl.reports.design import parse_design_text


def test_check2_undefined_step_names_the_closest(compile_source: Callable[..., CompiledFile]) -> None:
    compiled = compile_source("Feature: F\n  Scenario: S\n    Then there are three pods\n")
    assert messages(compiled) == [
        "s.feature:3:5: undefined step: 'there are three pods' — closest step: t.count — 'there are {count:int} pods'"
    ]


def test_check2_ambiguous_step_lists_the_candidates(compile_source: Callable[..., CompiledFile]) -> None:
    compiled = compile_source('Feature: F\n  Scenario: S\n    Then the thing "x" holds\n')
    assert messages(compiled) == [
        "s.feature:3:5: ambiguous step: 'the thing \"x\" holds' matches t.named_thing, t.thing — reword the phrases so one matches"
    ]


def test_check3_types_and_units(compile_source: Callable[..., CompiledFile]) -> None:
    text = "title: T\nsteps:\n  - baseline: {of: x, as: g}\n  - power_limit: {gpu: $g, equals: 300 volts}\n"
    assert messages(compile_source(text, "t.yaml")) == [
        "t.yaml:4:36: t.power_limit: parameter 'equals': '300 volts' is not a power — write it like 300 W or 300000 mW — got '300 volts'"
    ]


def test_check3_within_on_an_action(compile_source: Callable[..., CompiledFile]) -> None:
    text = 'Feature: F\n  Scenario: S\n    When within 2 s the manifest "m" is applied as "o"\n'
    assert messages(compile_source(text)) == [
        "s.feature:3:5: `within` applies only to checks, and t.apply is a when-step — drop the `within` prefix"
    ]


def test_check4_reads_before_binding_and_rebinding(compile_source: Callable[..., CompiledFile]) -> None:
    text = (
        "Feature: F\n"
        "  Background:\n"
        '    Given a baseline of caps as "c0"\n'
        "  Scenario: S\n"
        '    Then the counter "m" grew by at least 1 since "later"\n'
        '    Given a baseline of counters as "later"\n'
        '    And a baseline of counters as "c0"\n'
    )
    assert messages(compile_source(text)) == [
        's.feature:5:5: $later is read before it is bound — bind it in an earlier step with as "later"',
        's.feature:7:5: "c0" is already bound — bindings are immutable — choose another name',
    ]


def test_check4_background_bindings_are_visible_to_every_scenario(compile_source: Callable[..., CompiledFile]) -> None:
    text = (
        'Feature: F\n  Background:\n    Given a baseline of caps as "c0"\n'
        '  Scenario: A\n    Then the counter "m" grew by at least 1 since "c0"\n'
        '  Scenario: B\n    Then the counter "m" grew by at least 2 since "c0"\n'
    )
    assert compile_source(text).ok


def test_check5_unknown_capability_points_at_its_tag(compile_source: Callable[..., CompiledFile]) -> None:
    text = "@design:8.6.2 @needs:nvm\nFeature: F\n  Scenario: S\n    Then there are 3 pods\n"
    assert messages(compile_source(text)) == ["s.feature:1:15: unknown capability 'nvm' — did you mean 'nvml'?"]
    text = "Feature: F\n  @needs:k8s\n  @needs:nvm\n  Scenario: S\n    Then there are 3 pods\n"
    assert messages(compile_source(text)) == ["s.feature:3:3: unknown capability 'nvm' — did you mean 'nvml'?"]
    yaml_text = "title: S\nneeds:\n  - k8s\n  - nvm\nsteps:\n  - count: {count: 3}\n"
    assert messages(compile_source(yaml_text, name="s.yaml")) == ["s.yaml:4:5: unknown capability 'nvm' — did you mean 'nvml'?"]


def test_check5_needs_are_known_statically(compile_source: Callable[..., CompiledFile]) -> None:
    text = '@needs:dcgm\nFeature: F\n  Scenario: S\n    When the manifest "m" is applied as "o"\n    Then there are 3 pods\n'
    feature = compile_source(text).feature
    assert feature.needs(feature.scenarios[0]) == {"dcgm", "k8s-write"}


def test_check6_mutation_without_compensation(compile_source: Callable[..., CompiledFile]) -> None:
    text = "Feature: F\n  Scenario: S\n    When the GPU caps are scribbled on\n"
    assert messages(compile_source(text)) == [
        "s.feature:3:5: t.scribble has effects (writes-gpu-caps) but no compensation — "
        "declare compensation= in its step library so teardown can undo it"
    ]


def test_check8_a_window_shorter_than_the_checks_causal_minimum(compile_source: Callable[..., CompiledFile]) -> None:
    text = (
        'Feature: F\n  Scenario: S\n    Given a baseline of counters as "c0"\n'
        '    Then within 10 s the counter "m" grew by at least 1 since "c0"\n'
        '    Then within 15 s the counter "m" grew by at least 1 since "c0"\n'
        '    Then within 1 agent tick the counter "m" grew by at least 1 since "c0"\n'
    )
    assert messages(compile_source(text)) == [
        "s.feature:4:5: within 10 s is shorter than t.counter_delta can settle (1 agent tick) — wait at least within 1 agent tick"
    ]


def test_duplicate_scenario_names_and_ids_in_a_file(compile_source: Callable[..., CompiledFile]) -> None:
    text = "@id:B5\nFeature: F\n  Scenario: S\n    Then there are 3 pods\n  Scenario: S\n    Then there are 4 pods\n"
    assert messages(compile_source(text)) == [
        "s.feature:5:3: scenario id 'B5' is used twice (first at line 3) — "
        "ids name one scenario each; put @id on the scenarios, not the feature",
        "s.feature:5:3: scenario name 'S' is used twice (first at line 3) — give each scenario its own name",
    ]


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.feature").write_text("Feature: A\n  @id:B5\n  Scenario: S\n    Then there are 3 pods\n")
    (tmp_path / "b.yaml").write_text("title: T\nid: B5\nsteps:\n  - count: {count: 1}\n")
    files, extra = compile_paths([tmp_path], make_registry())
    assert all(f.ok for f in files)
    [diag] = extra
    assert diag.location.file.endswith("b.yaml") and diag.location.line == 1
    assert diag.message.startswith("scenario id 'B5' is also used at ") and diag.message.endswith("a.feature:3:3")


def test_check7_absolute_check_after_a_scenario_that_increments(tmp_path: Path) -> None:
    (tmp_path / "a_b5.feature").write_text("Feature: B5\n  Scenario: Conflict\n    When the agent counters are bumped\n")
    (tmp_path / "b_b4.feature").write_text(
        'Feature: B4\n  Scenario: Fresh counters\n    Then the counter "multi_pod_gpu_total" is 0\n'
        "  Scenario: Same scenario is fine\n    When the agent counters are bumped\n"
    )
    files, extra = compile_paths([tmp_path], make_registry())
    assert all(f.ok for f in files)
    [diag] = extra
    assert (diag.location.file.endswith("b_b4.feature"), diag.location.line, diag.check) == (True, 3, "ordering")
    assert diag.message.startswith("t.counter_is asserts the absolute value of agent-counters, which an earlier scenario increments (")
    assert diag.message.endswith("a_b5.feature:3:5)") and diag.hint == "compare against a baseline taken in this scenario, or run it first"
    (tmp_path / "a_b5.feature").unlink()
    assert compile_paths([tmp_path], make_registry())[1] == []  # the increment after the check is no hazard


DESIGN_DOC = """\
# Multi-tenant test plan
## 8.5.6 Conflicts
### §8.5.7 Safe default
| id | requirement |
|----|-------------|
| B5 | conflict falls back |
| **A2** | planner annotates |

Text mentioning 9.9.9 does not define it.

### 8.6 DCGM pass

1. Reuse of the NVML checks.
2. DCGM current caps.
"""


def design_ids_from_markdown(text: str) -> set[str]:
    return set(parse_design_text(text, "plan.md").requirements)


def test_design_ids_come_from_headings_tables_and_numbered_items() -> None:
    # one parser (the reports package's) decides which ids a design doc defines, for check 9 and for trace
    assert design_ids_from_markdown(DESIGN_DOC) == {"8.5.6", "8.5.7", "B5", "A2", "8.6", "8.6.1", "8.6.2"}


def test_check9_design_ids_must_exist(compile_source: Callable[..., CompiledFile]) -> None:
    text = "Feature: F\n  @design:8.5.7 @design:8.5.8\n  Scenario: S\n    Then there are 3 pods\n"
    compiled = compile_source(text, design_ids=design_ids_from_markdown(DESIGN_DOC), design_source="plan.md")
    assert messages(compiled) == ["s.feature:3:3: design id '8.5.8' is not in the design doc (plan.md) — did you mean '8.5.7'?"]
    assert compile_source(text).ok  # without a design doc, check 9 is off


def test_all_errors_of_a_file_come_at_once(compile_source: Callable[..., CompiledFile]) -> None:
    text = (
        "@needs:gpuz\nFeature: F\n  Scenario: S\n"
        "    Then there are many pods\n"
        '    Then the counter "m" grew by at least 1 since "nope"\n'
        "    When the GPU caps are scribbled on\n"
    )
    assert messages(compile_source(text)) == [
        "s.feature:1:1: unknown capability 'gpuz' — known: dcgm, k8s, k8s-write, live, nvml, path-a, path-b, planner",
        "s.feature:4:5: undefined step: 'there are many pods' — closest step: t.count — 'there are {count:int} pods'",
        "s.feature:6:5: t.scribble has effects (writes-gpu-caps) but no compensation — "
        "declare compensation= in its step library so teardown can undo it",
    ]  # the unbound "$nope" is not reported while a step is undefined: it might be the one meant to bind it
