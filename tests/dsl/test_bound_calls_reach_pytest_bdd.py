"""The compiler's binding reaches pytest-bdd: while scenarios run, no step text is matched against
the declarations again, except a text that stands for two different calls in one scenario (the
same words over two data tables), which is matched as before. Every step still gets its own
parameters: backgrounds, rule backgrounds, outline rows, tables and YAML scenarios."""

from __future__ import annotations

import json
import textwrap

import pytest
from recording_library import RECORDING_LIBRARY

LIBRARY = RECORDING_LIBRARY + '''

class Word(Params):
    word: str


@REGISTRY.then("rec.table", "the GPUs have these limits: {rows:table}", key="limits")
def table(ctx: StepContext, p: Rows) -> None:
    log("table " + ",".join(f"{r.gpu}={r.limit}" for r in p.rows))


@REGISTRY.given("rec.say", "we say {word}", key="say")
def say(ctx: StepContext, p: Word) -> None:
    log("say " + p.word)
'''

# Counts Registry.match calls made after collection (a spy around the real method).
CONFTEST = '''
import json

import reclib  # noqa: F401
from stepgraph.dsl.registry import Registry

STATE = {"running": False, "matched": []}
_match = Registry.match


def counting_match(self, text):
    if STATE["running"]:
        STATE["matched"].append(text)
    return _match(self, text)


Registry.match = counting_match


def pytest_collection_finish(session):
    STATE["running"] = True


def pytest_sessionfinish(session):
    with open("matched.json", "w") as f:
        json.dump(STATE["matched"], f)
'''

FEATURE = '''\
Feature: Bound calls
  Background:
    Given we say "feature"

  Rule: with its own background
    Background:
      Given we say "rule"

    Scenario: one table
      Then the GPUs have these limits:
        | gpu | limit |
        | 0   | 300 W |

    Scenario: the same words over two tables
      Then the GPUs have these limits:
        | gpu | limit |
        | 1   | 250 W |
      And the GPUs have these limits:
        | gpu | limit |
        | 2   | 200 W |

  Rule: outlines
    Scenario Outline: rows
      Given we say "<word>"

      Examples:
        | word  |
        | north |
        | south |
'''

YAML = '''\
title: Bound calls in YAML
steps:
  - say: {word: yaml}
'''


def test_running_scenarios_matches_no_text_again(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nstepgraph_paths = scenarios\n")
    pytester.makepyfile(reclib=LIBRARY, conftest=CONFTEST)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "a.feature").write_text(textwrap.dedent(FEATURE))
    (pytester.path / "scenarios" / "b.yaml").write_text(YAML)
    monkeypatch.setenv("REC_LOG", str(pytester.path / "rec.log"))
    result = pytester.runpytest_subprocess("--target", "local", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)
    assert (pytester.path / "rec.log").read_text().splitlines() == [
        "say feature", "say rule", "table 0=300 W",
        "say feature", "say rule", "table 1=250 W", "table 2=200 W",
        "say feature", "say north",
        "say feature", "say south",
        "say yaml",
    ]
    assert json.loads((pytester.path / "matched.json").read_text()) == ["the GPUs have these limits:"]
