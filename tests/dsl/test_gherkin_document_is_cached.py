"""What a `.feature` text parses into (gherkin-official's document, plain JSON data) is kept on
disk, named by the text: a second compile of the same file in a new process does not import the
parser and gives the same IR and diagnostics; an edited text is parsed again; a text that does
not parse is reported every time and never kept; a kept file that is not a document is ignored."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from stepgraph.dsl.compiler import CompiledFile
from stepgraph.dsl.load_gherkin import _document_file, _document_key, parse_document

GOOD = """\
Feature: Kept
  @id:K1
  Scenario: bystander
    Given the manifest "examples/40-bystander.yaml" is applied as "bystander"
    When nonsense happens
"""

COMPILE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from dsl_vocabulary import make_registry
from stepgraph.dsl.compiler import compile_file
compiled = compile_file(Path(sys.argv[1]), make_registry(), display="s.feature")
scenario = compiled.feature.scenarios[0]
print(repr(scenario.tags), repr(scenario.location))
print([(c.step_id, repr(c.params), c.bind_as, c.location) for c in scenario.steps])
print([str(d) for d in compiled.diagnostics])
print("gherkin.parser" in sys.modules)
"""


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEPGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    parse_document.cache_clear()  # this process's few recent texts: every compile here reads the disk
    return tmp_path / "cache"


def _compile_in_a_process(path: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", COMPILE, str(path), str(Path(__file__).parent)],
                          capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip().splitlines()


def test_a_second_compile_reads_the_kept_document_and_gives_the_same_ir(tmp_path: Path) -> None:
    path = tmp_path / "s.feature"
    path.write_text(GOOD)
    first = _compile_in_a_process(path)
    second = _compile_in_a_process(path)
    assert first[-1] == "True"
    assert second[-1] == "False"
    assert second[:-1] == first[:-1]
    assert "s.feature:5:5: undefined step: 'nonsense happens'" in first[2]  # a binding error: the document is still kept


def test_an_edited_text_is_parsed_again(compile_source: Callable[..., CompiledFile]) -> None:
    assert compile_source(GOOD).feature.scenarios[0].name == "bystander"
    parse_document.cache_clear()
    assert compile_source(GOOD.replace("bystander\n", "left alone\n")).feature.scenarios[0].name == "left alone"


def test_a_text_that_does_not_parse_is_reported_every_time_and_never_kept(
    compile_source: Callable[..., CompiledFile], own_cache: Path
) -> None:
    bad = GOOD.replace("  Scenario:", "  Scenari:")
    first = compile_source(bad)
    parse_document.cache_clear()
    second = compile_source(bad)
    assert [str(d) for d in first.diagnostics] == [str(d) for d in second.diagnostics]
    assert any("Gherkin syntax" in str(d) for d in second.diagnostics)
    assert not list(own_cache.rglob("*.json"))


@pytest.mark.parametrize("kept", [b"not json", b"[1, 2]", b'"text"'])
def test_a_kept_file_that_is_not_a_document_is_ignored(compile_source: Callable[..., CompiledFile], kept: bytes) -> None:
    expected = [str(d) for d in compile_source(GOOD).diagnostics]
    parse_document.cache_clear()
    key = _document_key(GOOD)
    assert key is not None
    _document_file(key).write_bytes(kept)
    again = compile_source(GOOD)
    assert again.feature is not None and again.feature.scenarios[0].name == "bystander"
    assert [str(d) for d in again.diagnostics] == expected
