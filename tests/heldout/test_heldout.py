"""The held-out scenarios lint and run as their authors expected from the user documentation alone.

`expected.yaml` was written before the scenarios were first linted or run, by someone who had read
only the README, the language reference, the step catalog and the example scenarios. A file whose
behaviour still differs from what the documentation promises is marked `open:` there; its check is
an expected failure that turns red once the product is fixed, until the mark is taken off.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest
from heldout_runs import ROOT, SCENARIOS, Recorder, run_files
from ruamel.yaml import YAML

from stepgraph.dsl import cli

EXPECTED: dict = YAML(typ="safe", pure=True).load((SCENARIOS.parent / "expected.yaml").read_text(encoding="utf-8"))
DESIGN_DOC = ROOT / "docs" / "design" / "multi-tenant-test-plan.md"
ERROR_LINE = re.compile(r"^(?P<file>\S+?):(?P<line>\d+):(?P<col>\d+): (?P<message>.*)$")


def _open(name: str, check: str) -> str | None:
    return EXPECTED[name].get("open", {}).get(check)


def _verdict(name: str, check: str, problems: list[str]) -> None:
    """Fail on problems, unless an open finding predicts them; then fail if they are gone."""
    finding = _open(name, check)
    if finding is None:
        assert not problems, "\n\n".join(problems)
    elif problems:
        pytest.xfail(f"open finding {finding}: " + problems[0].splitlines()[0])
    else:
        pytest.fail(f"{name} now behaves as documented: take `{check}: {finding}` off its `open` in expected.yaml")


def test_every_scenario_file_has_an_expectation_and_every_expectation_a_file() -> None:
    files = {p.name for p in SCENARIOS.iterdir() if p.suffix in {".feature", ".yaml"}}
    assert files == set(EXPECTED)


def _lint_problems(name: str, code: int, text: str) -> list[str]:
    errors = [m for m in map(ERROR_LINE.match, text.splitlines()) if m and m["file"].endswith(name)]
    expected = EXPECTED[name]["lint"]
    if expected == "clean":
        return [] if (code, errors) == (0, []) else [f"expected a clean lint, got exit {code}:\n{text}"]
    if code != 2 or len(errors) != len(expected):
        return [f"expected exit 2 and {len(expected)} error(s), got exit {code}:\n{text}"]
    problems = []
    for want in expected:
        at_line = [e["message"] for e in errors if int(e["line"]) == want["line"]]
        if not any(want["says"] in m for m in at_line):
            problems.append(f"no error at line {want['line']} saying {want['says']!r}:\n{text}")
        elif "not" in want and any(want["not"] in m for m in at_line):
            problems.append(f"the error at line {want['line']} says {want['not']!r}:\n{text}")
    return problems


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_lint(name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code = cli.main(["lint", "--design-doc", str(DESIGN_DOC), str(SCENARIOS / name)])
    out = capsys.readouterr()
    _verdict(name, "lint", _lint_problems(name, code, out.out + out.err))


# The runs: each (world, fault switches) once, over every file that declares an outcome for it.
def _configurations() -> dict[tuple[str, str], dict[str, dict[str, str]]]:
    """(world, faults as JSON) → file → scenario id → expected outcome."""
    runs: dict[tuple[str, str], dict[str, dict[str, str]]] = {}
    for name, spec in EXPECTED.items():
        for world, outcomes in spec.get("runs", {}).items():
            runs.setdefault((world, "{}"), {})[name] = dict(outcomes)
        for entry in spec.get("fails_under", []):
            wanted = {i: "failed" for i in entry["failed"]} | {i: "passed" for i in entry.get("passed", [])}
            runs.setdefault((entry["world"], json.dumps(entry["faults"], sort_keys=True)), {})[name] = wanted
    return runs


CONFIGURATIONS = _configurations()


@functools.cache
def _run(world: str, faults: str) -> Recorder:
    files = CONFIGURATIONS[(world, faults)]
    ids = sorted({i for wanted in files.values() for i in wanted})
    # Only the scenarios an expectation names run: a fault run does not repeat the others.
    return run_files(sorted(files), world, json.loads(faults), "-m", " or ".join(f"id:{i}" for i in ids))


def _run_problems(name: str, wanted: dict[str, str], recorder: Recorder, fault_run: bool) -> list[str]:
    problems = []
    for scenario_id, outcome in sorted(wanted.items()):
        seen = recorder.outcomes.get(scenario_id, "not run")
        text = "\n".join(recorder.texts.get(scenario_id, []))
        if seen != outcome:
            problems.append(f"{name} {scenario_id}: expected {outcome}, got {seen}\n{text}")
        elif outcome == "failed" and not fault_run and (line := EXPECTED[name].get("fails_at", {}).get(scenario_id)):
            step = f"{name}:{line}:"
            if step not in text:
                problems.append(f"{name} {scenario_id}: expected to fail at line {line}\n{text}")
            elif EXPECTED[name].get("failure_block") and (step not in text.lstrip().splitlines()[0] or "site-packages" in text):
                problems.append(f"{name} {scenario_id}: the failure is not one block naming the step\n{text}")
    return problems


@pytest.mark.parametrize(("world", "faults"), sorted(CONFIGURATIONS), ids=[f"{w}-{f}" for w, f in sorted(CONFIGURATIONS)])
def test_runs(world: str, faults: str) -> None:
    recorder = _run(world, faults)
    problems, predicted = [], []
    for name, wanted in sorted(CONFIGURATIONS[(world, faults)].items()):
        found = _run_problems(name, wanted, recorder, faults != "{}")
        finding = _open(name, "run")
        if finding is None:
            problems += found
        elif found:
            predicted.append(f"{name}: open finding {finding}")
        else:
            problems.append(f"{name} now behaves as documented: take `run: {finding}` off its `open` in expected.yaml")
    assert not problems, "\n\n".join(problems)
    if predicted:
        pytest.xfail("; ".join(predicted))


SELECTIONS = [(name, marker, ids) for name, spec in sorted(EXPECTED.items()) for marker, ids in spec.get("select", {}).items()]


@pytest.mark.parametrize(("name", "marker", "ids"), SELECTIONS, ids=[f"{n}[-m {m}]" for n, m, _ in SELECTIONS])
def test_selection_by_marker(name: str, marker: str, ids: list[str]) -> None:
    recorder = run_files([name], "path-b", None, "-m", marker, "--collect-only")
    # Each collected item is named by its most specific id (a row's own over its outline's).
    collected = sorted(max(item, key=len) for item in recorder.collected)
    assert collected == sorted(ids)


def _graph(path: object, capsys: pytest.CaptureFixture[str]) -> object:
    """A file's step graphs as JSON, without source locations (they differ between syntaxes)."""
    assert cli.main(["graph", str(path), "--format", "json"]) == 0
    graphs = json.loads(capsys.readouterr().out)

    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "location"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(graphs)


CLEAN = sorted(name for name, spec in EXPECTED.items() if spec["lint"] == "clean")


@pytest.mark.parametrize("name", CLEAN)
def test_convert_to_the_other_syntax_keeps_the_graphs(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    source = SCENARIOS / name
    other = tmp_path / (source.stem + (".yaml" if source.suffix == ".feature" else ".feature"))
    assert cli.main(["convert", str(source), "--to", "yaml" if other.suffix == ".yaml" else "gherkin", "--out", str(other)]) == 0
    capsys.readouterr()
    assert _graph(other, capsys) == _graph(source, capsys)
