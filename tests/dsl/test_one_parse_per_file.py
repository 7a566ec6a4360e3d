"""Collection parses each scenario file's Gherkin once: the compiler, the collector and pytest-bdd
share one document (a YAML file's once too, as the `.feature` text it is rendered to); a second
run parses none, reading the documents the first kept.

The runs are on the built-in `local` target: parsing is collection's, whatever the target, and the
default one (the twin) would add a cluster's start to each of the two processes."""

from __future__ import annotations

import json
import textwrap

import pytest

# Counts gherkin-official parses by text, from inside the run (a spy around the real parser).
CONFTEST = """
import atexit
import collections
import json

from gherkin.parser import Parser

PARSED = collections.Counter()
_parse = Parser.parse


def counting_parse(self, token_scanner, *args, **kwargs):
    PARSED[token_scanner.splitlines()[0] if isinstance(token_scanner, str) else "?"] += 1
    return _parse(self, token_scanner, *args, **kwargs)


Parser.parse = counting_parse
atexit.register(lambda: open("parses.json", "w").write(json.dumps(PARSED)))
"""

FEATURE = """\
Feature: Written in Gherkin
  Scenario: one
    Given the time is noted as "t0"

  Scenario: two
    Given the time is noted as "t1"
"""

YAML = """\
title: Written in YAML
steps:
  - bind: {value: ok, as: state}
"""


def test_each_file_is_parsed_once(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPGRAPH_CACHE_DIR", str(pytester.path / "cache"))
    pytester.makeini("[pytest]\nstepgraph_paths = scenarios\n")
    pytester.makeconftest(CONFTEST)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "a.feature").write_text(textwrap.dedent(FEATURE))
    (pytester.path / "scenarios" / "b.yaml").write_text(YAML)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "--target", "local")
    result.assert_outcomes(passed=3)
    parses = json.loads((pytester.path / "parses.json").read_text())
    assert parses == {"Feature: Written in Gherkin": 1, "Feature: Written in YAML": 1}
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "--target", "local")
    result.assert_outcomes(passed=3)
    assert json.loads((pytester.path / "parses.json").read_text()) == {}
