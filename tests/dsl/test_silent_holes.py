"""Text the Gherkin parser accepts but that would silently drop steps or trace to nothing: each is
a compile error saying what was meant."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from dsl_vocabulary import messages

from stepgraph.dsl.compiler import CompiledFile

STEP = 'Given a baseline of agent.counters as "c0"'
LATER = 'When the objects "c0" are deleted'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            f"Feature: F\n  Scenario: S\n    Givn {STEP[6:]}\n    {LATER}\n",
            "s.feature:3:5: 'Givn' is not a Gherkin keyword, so this line is read as description text and the step never runs"
            " — did you mean `Given`?",
            id="keyword typo before the first step",
        ),
        pytest.param(
            f"Feature: F\n  Scenario: S\n    Givn {STEP[6:]}\n    And {LATER[5:]}\n",
            "s.feature:3:5: 'Givn' is not a Gherkin keyword, so this line is read as description text and the step never runs"
            " — did you mean `Given`?",
            id="keyword typo followed by And",
        ),
        pytest.param(
            f"Feature: F\n  Scenario: S\n    {STEP[6:]}\n    {LATER}\n",
            "s.feature:3:5: this line reads like the step t.baseline but has no keyword, so it is description text and never runs"
            " — start it with `Given` (or `And`)",
            id="step without keyword",
        ),
        pytest.param(
            f"Feature: F\n  Back\ufeffground:\n    {STEP}\n\n  Scenario: S\n    {LATER}\n",
            "s.feature:2:3: the keyword 'Background:' contains invisible characters (U+FEFF), so this line and the steps under it"
            " are description text — retype it as `Background:`",
            id="invisible character in a keyword",
        ),
        pytest.param(
            f"Feature: F\n    {STEP}\n\n  Scenario: S\n    {LATER}\n",
            "s.feature:2:5: a step above the scenarios is read as description text, so it never runs"
            " — put it under a `Background:` or `Scenario:` line (was one deleted?)",
            id="deleted Background line",
        ),
        pytest.param(
            f"Feature: F\n  background:\n    {STEP}\n\n  Scenario: S\n    {LATER}\n",
            "s.feature:2:3: 'background' is not written `Background:`, so it is read as description text — write `Background:`",
            id="keyword in the wrong case",
        ),
        pytest.param(
            "Feature: F\n  Scenario: S\n",
            "s.feature:2:3: the Scenario has no steps — add its steps, each starting with Given, When, Then, And or But",
            id="scenario without steps",
        ),
        pytest.param(
            f"Feature: F\n  Scenario: S\n    {STEP}\n  Scenaro: T\n    {LATER}\n",
            "s.feature:4:3: Gherkin syntax: expected: #EOF, #TableRow, #DocStringSeparator, #StepLine, #TagLine, #ExamplesLine,"
            " #ScenarioLine, #RuleLine, #Comment, #Empty, got 'Scenaro: T' — did you mean `Scenario:`?",
            id="block keyword typo",
        ),
    ],
)
def test_lines_that_would_silently_vanish_are_errors(compile_source: Callable[..., CompiledFile], text: str, expected: str) -> None:
    assert expected in messages(compile_source(text))


def test_prose_in_descriptions_stays_allowed(compile_source: Callable[..., CompiledFile]) -> None:
    text = (
        "Feature: F\n  The agent keeps its limits. Then the planner runs.\n  Where it runs, nobody knows.\n"
        "  Scenario: S\n    The check below is the point; given enough time it holds.\n    Then there are 3 pods\n"
    )
    assert messages(compile_source(text)) == []


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("@desing:8.5.7", "s.feature:1:1: unknown tag namespace 'desing' in @desing:8.5.7 — did you mean @design:8.5.7?"),
        ("@ID:B5", "s.feature:1:1: unknown tag namespace 'ID' in @ID:B5 — did you mean @id:B5?"),
        ("@id", "s.feature:1:1: @id has no value — write it like @id:B5"),
        ("@needs:", "s.feature:1:1: @needs: has no value — write it like @needs:nvml"),
        ("@needs=nvml", "s.feature:1:1: @needs=nvml is a free tag, not a needs tag — write it @needs:nvml"),
        (
            "@xfail",
            "s.feature:1:1: @xfail is a pytest marker, not a scenario tag: it would change how the scenario runs"
            " — remove it, or rename the tag",
        ),
    ],
)
def test_tags_that_look_like_ours_are_errors(compile_source: Callable[..., CompiledFile], tag: str, expected: str) -> None:
    assert messages(compile_source(f"{tag}\nFeature: F\n  Scenario: S\n    Then there are 3 pods\n")) == [expected]


def test_free_tags_stay_allowed(compile_source: Callable[..., CompiledFile]) -> None:
    compiled = compile_source("@slow @team:power @needs-review\nFeature: F\n  Scenario: S\n    Then there are 3 pods\n")
    assert compiled.ok and compiled.feature.tags.other == ("slow", "team:power", "needs-review")


def test_yaml_tags_and_empty_steps(compile_source: Callable[..., CompiledFile]) -> None:
    assert messages(compile_source("title: t\ntags: [desing:B5, slow]\nsteps: []\n", "t.yaml")) == [
        "t.yaml:2:8: unknown tag namespace 'desing' in @desing:B5 — did you mean @design:B5?",
        "t.yaml:3:1: the scenario has no steps — list its steps under `steps:`, one `- key: {params}` per line",
    ]


def test_the_twin_rejects_an_option_it_does_not_take() -> None:
    from stepgraph.dsl import TargetConfigError
    from stepgraph.dsl.target import check_options
    from stepgraph.targets.twin import TwinTarget

    check_options(TwinTarget(env={}), {"world": "path-a", "seed": "3"})
    with pytest.raises(TargetConfigError) as info:
        check_options(TwinTarget(env={}), {"bogus": "1"})
    assert str(info.value).startswith("--target-option bogus=1: target 'twin' has no option 'bogus' — its options: actuator (nvml")


def test_lint_finds_a_manifest_that_does_not_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from stepgraph.dsl.cli import main

    (tmp_path / "mine.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    (tmp_path / "s.feature").write_text(
        "Feature: F\n  Scenario: S\n"
        '    When the manifest "mine.yaml" is applied as "a"\n'  # a path from the working folder
        '    And the manifest "40-conflict-bystander" is applied as "b"\n'  # a shipped variant file, .yaml optional
        '    And the manifest "manifests/absent.yaml" is applied as "c"\n'
    )
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "s.feature"]) == 2
    assert capsys.readouterr().out.splitlines() == [
        "s.feature:5:5: k8s.apply: manifest 'manifests/absent.yaml' does not exist — give a path from the folder the run"
        f" starts in ({tmp_path}), or the name of a file in examples/manifests/<variant>/"
    ]


def test_every_option_the_twin_reads_is_one_it_declares() -> None:
    """An option read but not declared is refused as unknown before the target sees it."""
    from stepgraph.targets.twin import TwinTarget

    class Recording(dict[str, str]):
        def __init__(self) -> None:
            super().__init__()
            self.read: set[str] = set()

        def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
            self.read.add(key)
            return super().get(key, default)

        def __contains__(self, key: object) -> bool:
            self.read.add(str(key))
            return super().__contains__(key)

        def __getitem__(self, key: str) -> str:
            self.read.add(key)
            return super().__getitem__(key)

    options = Recording()
    TwinTarget(env={}).configure(options)
    assert options.read and options.read <= set(TwinTarget.options), sorted(options.read - set(TwinTarget.options))


def test_the_twin_agent_option_reaches_the_target_through_pytest(pytester: pytest.Pytester) -> None:
    # In the test's process, from a fresh process's state (tests/conftest.py).
    (pytester.path / "s.feature").write_text("Feature: F\n  Scenario: S\n    When we wait 1 s\n")
    done = pytester.runpytest_inprocess("s.feature", "-p", "no:cacheprovider", "-q", "--target", "twin",
                                        "--target-option", f"agent={pytester.path / 'absent'}", "-o", "stepgraph_paths=.")
    output = done.stdout.str() + done.stderr.str()
    assert done.ret == 2 and "Traceback" not in output, output
    assert f"twin: agent={pytester.path / 'absent'}: agent program" in output and "has no option 'agent'" not in output


@pytest.fixture
def catalog() -> Callable[[str], list[str]]:
    """Compile Gherkin steps against the real step libraries."""
    from stepgraph.dsl import REGISTRY
    from stepgraph.dsl.compiler import compile_text

    REGISTRY.load_entry_points()

    def lint(steps: str) -> list[str]:
        text = 'Feature: F\n  Scenario: S\n    Given a baseline of the Power Agent counters as "c0"\n' + steps
        from pathlib import Path

        return [str(d) for d in compile_text(text, Path("c.feature"), "c.feature", REGISTRY).diagnostics]

    return lint


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (
            'Then within 2 s the NVML power limits of all GPUs are "350, 325×3" in any GPU order',
            "c.feature:4:5: within 2 s is shorter than nvml.caps_multiset can settle (1 agent tick) — wait at least within 1 agent tick",
        ),
        (
            'Then within 10 s the counter "multi_pod_gpu_total" grew by at least 1 since "c0"',
            "c.feature:4:5: within 10 s is shorter than agent.counter_grew can settle (1 agent tick) — wait at least within 1 agent tick",
        ),
        (
            'Then within 3 agent ticks the worker pods carry the power limits "a/prefill=350"',
            "c.feature:4:5: within 3 agent ticks is shorter than planner.worker_annotations can settle (1 planner tick)"
            " — wait at least within 1 planner tick",
        ),
        (
            'Then within 1 s 1 pods matching "app=x" are running on the test node',
            "c.feature:4:5: within 1 s is shorter than k8s.pods_running can settle (5 s) — wait at least within 5 s",
        ),
    ],
)
def test_a_window_shorter_than_the_cause_is_an_error(catalog: Callable[[str], list[str]], step: str, expected: str) -> None:
    assert catalog(f"    {step}\n") == [expected]


def test_power_steps_take_watts_and_milliwatts(catalog: Callable[[str], list[str]]) -> None:
    assert catalog('    Then the power-limit annotation of pod "p" is 280000 mW\n') == []
    [message] = catalog('    Then the power-limit annotation of pod "p" is 280500 mW\n')
    assert "'280500 mW' is not a whole number of watts — this takes whole watts, e.g. 280 W or 280000 mW" in message


def test_a_bound_value_of_the_wrong_kind_is_a_type_error(catalog: Callable[[str], list[str]]) -> None:
    steps = (
        '    And the value "3" is bound as "gpu"\n'
        '    And a baseline of the NVML power limit of every GPU as "caps0"\n'
        '    And a snapshot of "caps0" is taken as "caps1"\n'
        '    Then the NVML power limit of GPU "gpu" is 280 W\n'
        '    And the NVML power limit of every GPU equals "caps1"\n'
        '    And the counter "multi_pod_gpu_total" did not change since "caps0"\n'
    )
    assert catalog(steps) == [
        "c.feature:7:5: nvml.cap_of_gpu: $gpu holds text (bound by common.bind at line 4), but parameter 'gpu' reads gpu"
        " — bind it with nvml.new_process_gpu",
        "c.feature:9:5: agent.counter_unchanged: $caps0 holds caps (bound by nvml.baseline_caps at line 5), but parameter 'since'"
        " reads metrics — bind it with agent.baseline",
    ]


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        (
            "{nvml_no_permision: true}",
            "twin: faults: the twin has no fault switch 'nvml_no_permision' — did you mean 'nvml_no_permission'? its switches: ",
        ),
        (
            "{nvml_no_permission: maybe}",
            "twin: faults: nvml_no_permission='maybe': Input should be a valid boolean, unable to interpret input "
            "— give it a value of its kind; its default is False",
        ),
    ],
)
def test_a_fault_switch_the_twin_does_not_take_is_named_with_the_ones_it_has(faults: str, message: str) -> None:
    from stepgraph.dsl import TargetConfigError
    from stepgraph.targets.twin import resolve_world

    with pytest.raises(TargetConfigError) as info:
        resolve_world({"world": "path-b", "faults": faults}, {})
    assert str(info.value).startswith(message), str(info.value)
    assert "pydantic" not in str(info.value)
