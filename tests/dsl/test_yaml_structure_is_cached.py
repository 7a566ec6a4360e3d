"""What a YAML scenario file's text cleanly reads into (plain data, the place of every node, a
layout the schema accepts) is kept on disk, named by the text: a second compile of the same
file in a new process imports neither ruamel nor jsonschema and gives the same IR; an edited text
is read again; the same text under another name is placed under that name; a text with a layout
error is reported every time."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from stepgraph.dsl.compiler import CompiledFile

GOOD = """\
title: Bystander untouched
id: B5
needs: [k8s-write]
steps:
  - apply: {manifest: examples/40-bystander.yaml, as: bystander}
  - nonsense_key: {x: 1}
"""

COMPILE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from dsl_vocabulary import make_registry
from stepgraph.dsl.compiler import compile_file
compiled = compile_file(Path(sys.argv[1]), make_registry(), display="s.yaml")
scenario = compiled.feature.scenarios[0]
print(repr(scenario.tags), repr(scenario.location))
print([(c.step_id, repr(c.params), c.bind_as, c.location) for c in scenario.steps])
print([str(d) for d in compiled.diagnostics])
print(sorted(set(sys.modules) & {'ruamel.yaml', 'jsonschema'}))  # (the namespace package ruamel is found, not run)
"""


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPGRAPH_CACHE_DIR", str(tmp_path / "cache"))


def _compile_in_a_process(path: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", COMPILE, str(path), str(Path(__file__).parent)],
                          capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip().splitlines()


def test_a_second_compile_reads_the_kept_structure_and_gives_the_same_ir(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD)
    first = _compile_in_a_process(path)
    second = _compile_in_a_process(path)
    assert first[-1] == "['jsonschema', 'ruamel.yaml']"
    assert second[-1] == "[]"
    assert second[:-1] == first[:-1]
    assert "s.yaml:6:5: unknown step 'nonsense_key'" in first[2]  # a binding error: the structure is still kept


def test_an_edited_text_is_read_again_and_another_name_placed_under_it(compile_source: Callable[..., CompiledFile]) -> None:
    assert compile_source(GOOD, "a.yaml").feature.scenarios[0].name == "Bystander untouched"
    assert compile_source(GOOD.replace("untouched", "left alone"), "a.yaml").feature.scenarios[0].name == "Bystander left alone"
    moved = compile_source(GOOD, "b.yaml")
    assert moved.feature.scenarios[0].location.file == "b.yaml"
    assert [str(d.location) for d in moved.diagnostics] == ["b.yaml:6:5"]


def test_a_layout_error_is_reported_every_time(compile_source: Callable[..., CompiledFile]) -> None:
    bad = GOOD.replace("title:", "titel:")
    first, second = compile_source(bad, "c.yaml"), compile_source(bad, "c.yaml")
    assert [str(d) for d in first.diagnostics] == [str(d) for d in second.diagnostics]
    assert any("unknown key 'titel'" in str(d) for d in second.diagnostics)
