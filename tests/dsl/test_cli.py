"""The `stepgraph` command: exit codes, outputs, and every kind of bad input as one clear line."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepgraph.dsl import REGISTRY, Params, StepContext
from stepgraph.dsl.cli import main

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "scenarios" / "demo"


class Word(Params):
    word: str


@pytest.fixture
def ambiguous_steps() -> Iterator[None]:
    """Two global steps whose phrases overlap, removed again afterwards."""
    REGISTRY.load_entry_points()

    def noop(ctx: StepContext, p: Word) -> None: ...

    REGISTRY.then("clitest.one", "the word {word} is fine", key="clitest_one")(noop)
    REGISTRY.then(
        "clitest.two",
        "the word {word} is {word2:word}",
        key="clitest_two",
        params=type("Two", (Params,), {"__annotations__": {"word": str, "word2": str}}),
    )(noop)
    yield
    for sid in ("clitest.one", "clitest.two"):
        REGISTRY.remove(sid)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_lint_clean_folder_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["lint", str(DEMO)], capsys)
    assert (code, out) == (0, "")
    assert err == "stepgraph lint: 2 file(s), 3 scenario(s): ok\n"


def test_bare_lint_checks_the_projects_scenario_paths_against_its_design_doc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nstepgraph_paths = ["cat"]\nstepgraph_design_doc = "plan.md"\n')
    (tmp_path / "plan.md").write_text("## §8.5.7 Conflicts\n")
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "a.feature").write_text("Feature: F\n  @design:8.5.8\n  Scenario: S\n    When we wait 1 s\n")
    code, out, _ = run(["lint"], capsys)
    assert (code, out) == (2, "cat/a.feature:3:3: design id '8.5.8' is not in the design doc (plan.md) — did you mean '8.5.7'?\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    code, _, err = run(["lint"], capsys)
    assert (
        code == 2 and err == "stepgraph: error: no PATH given and no stepgraph_paths in ./pyproject.toml — pass scenario files or folders\n"
    )


def test_lint_with_target_notes_what_it_would_skip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "n.feature").write_text('Feature: F\n  @needs:nvml\n  Scenario: S\n    Given the value "x" is bound as "x"\n')
    code, out, _ = run(["lint", str(tmp_path), "--target", "local"], capsys)
    assert code == 0 and out.endswith("n.feature:3:3: note: target 'local' would skip 'S' (lacks nvml)\n")


BAD_INPUT = {
    "tabs.yaml": ("title: T\nsteps:\n\t- wait: {duration: 1 s}\n", "tabs.yaml:3:1: YAML syntax: found character '\\t'"),
    "dupkey.yaml": ("title: T\ntitle: U\nsteps: []\n", "dupkey.yaml:2:1: YAML syntax: found duplicate key"),
    "bomb.yaml": (
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"a{i}: &a{i} [{', '.join(['*a' + ('' if i == 1 else str(i - 1))] * 10)}]\n" for i in range(1, 9))
        + "title: T\nsteps: []\n",
        "bomb.yaml:1:1: YAML aliases expand to more than 100000 nodes",
    ),
    "latin1.yaml": (b"title: caf\xe9\nsteps: []\n", "latin1.yaml:1:11: byte 0xe9 is not valid UTF-8"),
    "huge.yaml": ("title: T\nsteps:\n" + "  - wait: {duration: 1 s}\n" * 420_000, "huge.yaml:1:1: file is 10.9 MB, over the 1 MB limit"),
    "unknown_key.yaml": ("title: T\nsteps: [note_time: {as: t0}]\nowner: me\n", "unknown_key.yaml:3:1: unknown key 'owner' in the file"),
    "wrong_type.yaml": ("title: T\nsteps:\n  - wait: {duration: soon}\n", "wrong_type.yaml:3:22: common.wait: parameter 'duration':"),
    "unknown_step.feature": ("Feature: F\n  Scenario: S\n    Given a unicorn\n", "unknown_step.feature:3:5: undefined step: 'a unicorn'"),
    "ambiguous.feature": (
        'Feature: F\n  Scenario: S\n    Then the word "x" is fine\n',
        "ambiguous.feature:3:5: ambiguous step: 'the word \"x\" is fine' matches clitest.one, clitest.two",
    ),
    "unbound.yaml": ("title: T\nsteps:\n  - equals: {left: $a, right: $b}\n", "unbound.yaml:3:5: $a is read before it is bound"),
    "dup_names.feature": (
        "Feature: F\n  Scenario: S\n    When we wait 1 s\n  Scenario: S\n    When we wait 2 s\n",
        "dup_names.feature:4:3: scenario name 'S' is used twice",
    ),
    "dup_ids.feature": (
        "Feature: F\n  @id:X1\n  Scenario: S\n    When we wait 1 s\n  @id:X1\n  Scenario: T\n    When we wait 2 s\n",
        "dup_ids.feature:6:3: scenario id 'X1' is used twice",
    ),
    "syntax.feature": ("Feature: F\n  Scenario: S\n    Given x\n  Nonsense here\n", "syntax.feature:4:3: Gherkin syntax: expected:"),
}


@pytest.mark.usefixtures("ambiguous_steps")
@pytest.mark.parametrize("name", sorted(BAD_INPUT))
def test_bad_input_is_one_clear_line_and_exit_2(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    content, expected = BAD_INPUT[name]
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    monkeypatch.chdir(tmp_path)
    started = time.perf_counter()
    code, out, err = run(["lint", name], capsys)
    assert time.perf_counter() - started < 1
    assert code == 2
    assert "Traceback" not in out + err
    assert out.startswith(expected), out
    assert all(" — " in line for line in out.splitlines())


def test_missing_path_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["lint", "no/such/file.yaml"], capsys)
    assert (code, out) == (2, "no/such/file.yaml:1:1: no such file or directory — check the path\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "stepgraph: error: the following arguments are required: COMMAND — see `stepgraph --help`"),
        (["frobnicate"], "stepgraph: error: argument COMMAND: invalid choice: 'frobnicate'"),
        (["graph", "x.feature", "--format", "png"], "stepgraph: error: argument --format: invalid choice: 'png'"),
        (["convert", "x.feature"], "stepgraph: error: the following arguments are required: --to"),
        (["lint", "x", "--target", "nowhere"], "stepgraph: unknown target 'nowhere' — choose one of:"),
    ],
)
def test_usage_errors_are_one_line_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1


def test_convert_both_ways(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["convert", str(DEMO / "waiting.yaml"), "--to", "gherkin"], capsys)
    assert code == 0 and out.startswith("Feature: Demo — a YAML scenario waits on the target clock\n")
    assert '    Then within 2 agent ticks at least 20 s passed since "t0"\n' in out
    target = tmp_path / "bindings.yaml"
    code, _, _ = run(["convert", str(DEMO / "bindings.feature"), "--to", "yaml", "--out", str(target)], capsys)
    assert code == 0 and target.read_text().startswith("feature: Demo — bindings")


def test_graph_formats(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["graph", str(DEMO / "bindings.feature"), "--format", "json", "--scenario", "DEMO-2"], capsys)
    [graph] = json.loads(out)
    assert code == 0 and graph["id"] == "DEMO-2"
    steps = ["common.note_time", "common.bind", "common.wait", "common.elapsed", "common.value_is", "common.value_is"]
    assert [n["step"] for n in graph["nodes"]] == steps
    assert {"source": "n0", "target": "n3", "kind": "data", "label": "$t0"} in graph["edges"]
    _, mermaid, _ = run(["graph", str(DEMO / "bindings.feature")], capsys)
    assert mermaid.startswith("flowchart TD\n") and "-.->|$t0|" in mermaid
    _, dot, _ = run(["graph", str(DEMO / "waiting.yaml"), "--format", "dot"], capsys)
    assert dot.startswith("digraph stepgraph {") and "style=dashed" in dot


def test_compile_writes_features_and_graphs(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    code, _, err = run(["compile", "scenarios/demo", "--out", str(tmp_path)], capsys)
    assert code == 0, err
    feature = (tmp_path / "scenarios/demo/waiting.yaml.feature").read_text()
    assert "@id:DEMO-3 @demo @source:scenarios/demo/waiting.yaml:3" in feature
    assert json.loads((tmp_path / "scenarios/demo/bindings.feature.graph.json").read_text())[0]["id"] == "DEMO-1"


def test_steps_catalog_lists_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["steps"], capsys)
    REGISTRY.load_entry_points()
    assert code == 0 and out.startswith("# Step catalog\n")
    for decl in REGISTRY:
        assert f"### `{decl.id}` — {decl.keyword}" in out


def test_console_script_runs_without_a_traceback() -> None:
    result = subprocess.run([sys.executable, "-m", "stepgraph.dsl.cli", "lint", str(DEMO)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def _fake_distribution(root: Path, entry_points: str, modules: dict[str, str]) -> dict[str, str]:
    """A minimal installed distribution on a PYTHONPATH folder, so entry points are found for real."""
    dist = root / "stepgraph_fake-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: stepgraph-fake\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(entry_points)
    for name, code in modules.items():
        (root / f"{name}.py").write_text(code)
    return {**__import__("os").environ, "PYTHONPATH": str(root)}


def test_sub_commands_and_targets_come_from_entry_points(tmp_path: Path) -> None:
    env = _fake_distribution(
        tmp_path,
        "[stepgraph.commands]\nhello = fakecmd:main\n\n[stepgraph.targets]\ntwin = fakecmd:FakeTwin\n",
        {
            "fakecmd": "import sys\nfrom stepgraph.dsl import LocalTarget\n\n"
            "def main(argv):\n    print('hello', argv)\n    return 3\n\n"
            "class FakeTwin(LocalTarget):\n    name = 'twin'\n    capabilities = frozenset({'k8s'})\n"
        },
    )
    hello = subprocess.run(
        [sys.executable, "-m", "stepgraph.dsl.cli", "hello", "a", "--b"], capture_output=True, text=True, env=env, check=False
    )
    assert (hello.returncode, hello.stdout) == (3, "hello ['a', '--b']\n")
    helptext = subprocess.run([sys.executable, "-m", "stepgraph.dsl.cli", "--help"], capture_output=True, text=True, env=env, check=False)
    assert "hello" in helptext.stdout
    probe = (
        "from stepgraph.dsl.target import default_target_name, load_target\n"
        "t = load_target(default_target_name())\nprint(t.name, sorted(t.capabilities))"
    )
    default = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False)
    assert default.stdout == "twin ['k8s']\n", default.stderr


def test_a_broken_step_library_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    env = _fake_distribution(
        tmp_path,
        "[stepgraph.steps]\nbroken = brokensteps\n\n[stepgraph.commands]\n",
        {"brokensteps": "from stepgraph.dsl import when\n\n@when('Bad Id', 'x')\ndef x(ctx, p): ...\n"},
    )
    result = subprocess.run([sys.executable, "-m", "stepgraph.dsl.cli", "steps"], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == ("stepgraph: step library 'brokensteps': step 'Bad Id': ids are dotted lower-case names like 'k8s.apply'\n")


def test_errors_name_files_outside_the_working_folder_as_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "elsewhere").mkdir()
    bad = tmp_path / "elsewhere" / "bad.yaml"
    bad.write_text("title: T\nsteps:\n  - no_such_step: {}\n")
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    code, out, _ = run(["lint", str(bad)], capsys)
    assert (code, out.splitlines()[0]) == (2, f"{bad}:3:5: unknown step 'no_such_step' — run `stepgraph steps` to list the steps")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["lint", str(bad)], capsys)
    assert out.splitlines()[0].startswith("elsewhere/bad.yaml:3:5: ")


def test_the_command_freezes_the_heap_at_exit() -> None:
    # Its process ends when it returns: the interpreter's last collections of garbage then walk
    # nothing it made. Registered before the command runs, the probe's handler runs after its.
    probe = (
        "import atexit, gc, sys\n"
        "from stepgraph.command import main\n"
        "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0))\n"
        "sys.argv = ['stepgraph', 'lint', sys.argv[1]]\n"
        "code = main()\n"
        "print('frozen on return:', gc.get_freeze_count() > 0)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(DEMO)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["frozen on return: False", "frozen at exit: True"]
