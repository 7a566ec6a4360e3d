"""Hostile scenario files through the real command line: each is one `file:line:col: what — what to
do` line and exit 2 from `stepgraph lint`, and the same line (never a traceback) when pytest
collects it."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepgraph.dsl.cli import main

WAIT = "  - wait: {duration: 1 s}\n"
CHECK = "  - bind: {value: a, as: x}\n  - expect: {within: %s, all: [{value_is: {name: $x, value: a}}]}\n"
FEATURE = "Feature: F\n  Scenario: S\n"

CASES = {
    "merge_key.yaml": (
        "base: &b {duration: 1 s}\ntitle: T\nsteps:\n  - wait: {<<: *b}\n",
        "merge_key.yaml:4:12: YAML merge keys (`<<:`) are not supported — write the keys out in this mapping",
    ),
    "merge_block.yaml": (
        "title: T\nsteps:\n  - wait:\n      <<: {duration: 1 s}\n",
        "merge_block.yaml:4:7: YAML merge keys (`<<:`) are not supported — write the keys out in this mapping",
    ),
    "local_tag.yaml": (
        "title: T\nsteps:\n  - wait: !x {duration: 1 s}\n",
        "local_tag.yaml:3:11: YAML tag `!x` is not supported — remove the tag; to make a value text, quote it",
    ),
    "python_tuple.yaml": (
        "title: T\ntags: !!python/tuple [a]\nsteps:\n" + WAIT,
        "python_tuple.yaml:2:7: YAML tag `!!python/tuple` is not supported — remove the tag; to make a value text, quote it",
    ),
    "within_nan.yaml": (
        "title: T\nsteps:\n" + CHECK % ".nan",
        "within_nan.yaml:4:22: `within`: nan is not a duration — write it like 90 s, 500 ms, 2 min, 2 agent ticks or 1 planner tick",
    ),
    "within_inf.yaml": (
        "title: T\nsteps:\n" + CHECK % ".inf",
        "within_inf.yaml:4:22: `within`: inf is not a duration — write it like 90 s, 500 ms, 2 min, 2 agent ticks or 1 planner tick",
    ),
    "within_1e309.yaml": (
        "title: T\nsteps:\n" + CHECK % "1e309",
        "within_1e309.yaml:4:22: `within`: inf is not a duration — write it like 90 s, 500 ms, 2 min, 2 agent ticks or 1 planner tick",
    ),
    "wait_negative.yaml": (
        "title: T\nsteps:\n  - wait: {duration: -5}\n",
        "wait_negative.yaml:3:22: common.wait: parameter 'duration': -5 is not a duration — write it like 90 s, 500 ms, 2 min,"
        " 2 agent ticks or 1 planner tick — got -5",
    ),
    "wait_huge.yaml": (
        "title: T\nsteps:\n  - wait: {duration: 100000000000 s}\n",
        "wait_huge.yaml:3:22: common.wait: parameter 'duration': 100000000000 s is longer than a test can wait — at most 86400 s"
        " (a day), 10000 agent ticks or 1440 planner ticks — got '100000000000 s'",
    ),
    "within_huge.yaml": (
        "title: T\nsteps:\n" + CHECK % "100000000000000000000000 agent ticks",
        "within_huge.yaml:4:22: `within`: 99999999999999991611392 agent ticks is longer than a test can wait — at most 86400 s"
        " (a day), 10000 agent ticks or 1440 planner ticks",
    ),
    "within_huge.feature": (
        FEATURE + '    Given the value "a" is bound as "x"\n    Then within ' + "9" * 400 + ' s "x" is "a"\n',
        "within_huge.feature:4:5: `within`: inf s is longer than a test can wait — at most 86400 s (a day), 10000 agent ticks"
        " or 1440 planner ticks",
    ),
    "wait_huge.feature": (
        FEATURE + "    When we wait 100000000000 s\n",
        "wait_huge.feature:3:5: common.wait: parameter 'duration': 100000000000 s is longer than a test can wait — at most"
        " 86400 s (a day), 10000 agent ticks or 1440 planner ticks — got '100000000000 s'",
    ),
    "bare_at.feature": (
        "Feature: F\n  @\n  Scenario: S\n    When we wait 1 s\n",
        "bare_at.feature:2:3: a bare `@` is not a tag — write the tag's name right after the @, or remove the @",
    ),
    "private_tag.feature": (
        "Feature: F\n  @_private\n  Scenario: S\n    When we wait 1 s\n",
        "private_tag.feature:2:3: @_private starts with `_`, which a pytest marker name may not — write it @private",
    ),
    "private_tag.yaml": (
        "title: T\ntags: [_private]\nsteps:\n" + WAIT,
        "private_tag.yaml:2:8: @_private starts with `_`, which a pytest marker name may not — write it @private",
    ),
    "first_and.feature": (
        FEATURE + "    And we wait 1 s\n",
        "first_and.feature:3:5: the first step of a block starts with `And`, which continues a step before it — start it with"
        " Given, When or Then",
    ),
    "first_but.feature": (
        FEATURE + "    But we wait 1 s\n",
        "first_but.feature:3:5: the first step of a block starts with `But`, which continues a step before it — start it with"
        " Given, When or Then",
    ),
    "first_star.feature": (
        "Feature: F\n  Background:\n    * we wait 1 s\n  Scenario: S\n    When we wait 1 s\n",
        "first_star.feature:3:5: the first step of a block starts with `*`, which continues a step before it — start it with"
        " Given, When or Then",
    ),
    "outline_same_name.feature": (
        FEATURE.replace("S\n", "X\n") + "    When we wait 1 s\n  Scenario Outline: X\n    When we wait <n> s\n"
        "    Examples:\n      | n |\n      | 1 |\n",
        "outline_same_name.feature:4:3: the Scenario Outline 'X' has the name of the Scenario at line 2, so only one of them"
        " would run — give each its own name",
    ),
    "multi_line_title.yaml": (
        "title: |\n  first\n  second\nsteps:\n" + WAIT,
        "multi_line_title.yaml:1:8: `title` spans several lines — make it one line; put the rest under `description:`",
    ),
    "multi_line_feature.yaml": (
        'feature: "F\\nG"\nscenarios:\n  - title: T\n    steps:\n      - wait: {duration: 1 s}\n',
        "multi_line_feature.yaml:1:10: `feature` spans several lines — make it one line; put the rest under `description:`",
    ),
    "blank_title.yaml": ('title: "  "\nsteps:\n' + WAIT, "blank_title.yaml:1:8: `title` is only spaces — give it a name"),
    "cr_only.feature": (
        "Feature: F\r  Scenario: S\r    When we wait 1 s\r",
        "cr_only.feature:1:11: this line ends with a lone CR (carriage return), which the Gherkin parser does not read as a line"
        " end — save the file with LF (or CRLF) line endings",
    ),
    "cr_only.yaml": (
        "title: T\rsteps:\r" + WAIT.replace("\n", "\r"),
        "cr_only.yaml:1:9: this line ends with a lone CR (carriage return), which the Gherkin parser does not read as a line end"
        " — save the file with LF (or CRLF) line endings",
    ),
    "control_char.yaml": (
        "title: T\nsteps:\n" + WAIT + "  - wait: {duration: \x01}\n",
        "control_char.yaml:4:22: control character U+0001 in the text — remove it (write it as an escape inside a quoted YAML"
        " string if it is meant)",
    ),
    "line_separator.feature": (
        FEATURE + "    When we wait 1 s\u2028    When we wait 2 s\n",
        "line_separator.feature:3:21: control character U+2028 in the text — remove it (write it as an escape inside a quoted"
        " YAML string if it is meant)",
    ),
    "id_colon.feature": (
        "Feature: F\n  @id:B5:x\n  Scenario: S\n    When we wait 1 s\n",
        "id_colon.feature:2:3: @id:B5:x: an id has no `:` — write it like @id:B5",
    ),
    "id_as_tag.yaml": (
        "title: T\ntags: ['id:B5']\nsteps:\n" + WAIT,
        "id_as_tag.yaml:2:8: 'id:B5' is written as a tag — use the key: `id: B5`",
    ),
    "long_int.yaml": (
        "title: T\nsteps:\n  - wait: {duration: " + "9" * 5001 + "}\n",
        "long_int.yaml:3:22: a number with 5001 digits — no parameter takes a number that long; check it",
    ),
    "step_in_description.yaml": (
        "title: T\ndescription: |\n  Why this scenario exists.\n  Given we wait 1 s\nsteps:\n" + WAIT,
        "step_in_description.yaml:4:3: the description line 'Given we wait 1 s' would be read as Gherkin, not as description"
        " text — reword the line so it does not start with a Gherkin keyword, @, |, # or quotes",
    ),
    "newline_in_value.yaml": (
        'title: T\nsteps:\n  - bind: {value: "a\\nWhen we wait 1 s", as: x}\n',
        "newline_in_value.yaml:3:19: common.bind: parameter 'value' spans several lines — make it one line",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lint_names_the_position_and_exits_2(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text, expected = CASES[name]
    (tmp_path / name).write_bytes(text.encode("utf-8"))
    monkeypatch.chdir(tmp_path)
    code = main(["lint", name])
    out, err = capsys.readouterr()
    assert (code, out.splitlines()) == (2, [expected]), err
    assert "Traceback" not in out + err


COLLECTED = ("merge_key.yaml", "python_tuple.yaml", "within_nan.yaml", "bare_at.feature", "private_tag.feature",
             "first_and.feature", "first_star.feature", "outline_same_name.feature", "multi_line_title.yaml", "cr_only.feature",
             "long_int.yaml", "step_in_description.yaml", "newline_in_value.yaml", "within_huge.feature")


def test_pytest_collection_gives_the_same_lines_and_no_traceback(pytester: pytest.Pytester) -> None:
    for name in COLLECTED:
        (pytester.path / name).write_bytes(CASES[name][0].encode("utf-8"))
    pytester.makeini("[pytest]\nstepgraph_paths = .\n")
    result = pytester.runpytest_inprocess("--target", "local", "-p", "no:cacheprovider")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 2, output
    assert "Traceback" not in output and "INTERNALERROR" not in output
    for name in COLLECTED:
        assert CASES[name][1] in output, name
    result.assert_outcomes(errors=len(COLLECTED))


def test_compile_of_an_absolute_path_writes_only_into_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out, work = tmp_path / "src", tmp_path / "out", tmp_path / "work"
    for folder in (source, out, work):
        folder.mkdir()
    (source / "x.feature").write_text(FEATURE + "    When we wait 1 s\n")
    monkeypatch.chdir(work)  # the source is outside the working folder, so it is shown absolute
    assert main(["compile", str(source / "x.feature"), "--out", str(out)]) == 0, capsys.readouterr().err
    assert sorted(p.name for p in source.iterdir()) == ["x.feature"]
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == [f"{str(source).lstrip('/')}/x.feature.feature", f"{str(source).lstrip('/')}/x.feature.graph.json"]
