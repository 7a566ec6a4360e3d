"""Malformed and ill-typed YAML: each problem is one `file:line:col: what — what to do` line."""

from __future__ import annotations

import time
from collections.abc import Callable

from dsl_vocabulary import messages

from stepgraph.dsl.compiler import CompiledFile

HEADER = "title: T\nsteps:\n"


def test_tabs(compile_source: Callable[..., CompiledFile]) -> None:
    assert messages(compile_source("title: T\nsteps:\n\t- count: {count: 1}\n", "t.yaml")) == [
        "t.yaml:3:1: YAML syntax: found character '\\t' that cannot start any token — indent with spaces, not tabs"
    ]


def test_duplicate_keys(compile_source: Callable[..., CompiledFile]) -> None:
    [message] = messages(compile_source("title: T\ntitle: U\nsteps: []\n", "t.yaml"))
    assert message.startswith('t.yaml:2:1: YAML syntax: found duplicate key "title"')
    assert message.endswith("— each key may appear once per mapping")


def test_alias_bomb_expansion_is_bounded(compile_source: Callable[..., CompiledFile]) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]"
        for i in range(1, 10)
    ]
    started = time.perf_counter()
    result = compile_source("\n".join(lines) + "\ntitle: T\nsteps: []\n", "bomb.yaml")
    assert time.perf_counter() - started < 1
    assert messages(result) == [
        "bomb.yaml:1:1: YAML aliases expand to more than 100000 nodes — remove the anchors (&) and aliases (*) and write the steps out"
    ]


def test_non_utf8_bytes(compile_source: Callable[..., CompiledFile]) -> None:
    assert messages(compile_source(b"title: T\nsteps:\n  - count: {count: \xff}\n", "t.yaml")) == [
        "t.yaml:3:20: byte 0xff is not valid UTF-8 — save the file as UTF-8"
    ]


def test_ten_megabyte_file_is_refused_quickly(compile_source: Callable[..., CompiledFile]) -> None:
    started = time.perf_counter()
    result = compile_source(HEADER + "  - count: {count: 1}\n" * 500_000, "big.yaml")
    assert time.perf_counter() - started < 1
    assert messages(result) == ["big.yaml:1:1: file is 11.0 MB, over the 1 MB limit for a scenario file — split it into several files"]


def test_unknown_keys_at_every_level(compile_source: Callable[..., CompiledFile]) -> None:
    text = "title: T\ncolour: red\nsteps:\n  - expect: {within: 2 s, all: [{count: {count: 1}}], extra: 1}\n"
    assert messages(compile_source(text, "t.yaml")) == [
        "t.yaml:2:1: unknown key 'colour' in the file — allowed keys: title, id, design, needs, tags, description, steps, background",
        "t.yaml:4:55: unknown key 'extra' in steps/0/expect — allowed keys: within, throughout, all, together",
    ]


def test_wrong_types(compile_source: Callable[..., CompiledFile]) -> None:
    text = "title: [not, a, string]\nsteps:\n  - count: {count: many}\n  - count: 3\n"
    assert messages(compile_source(text, "t.yaml")) == [
        "t.yaml:1:8: title: expected a string, got ['not', 'a', 'string'] — fix the value's type",
        "t.yaml:3:20: t.count: parameter 'count': Input should be a valid integer, unable to parse string as an integer"
        " — got 'many'; `stepgraph steps` shows what t.count takes",
        "t.yaml:4:12: steps/1/count: expected a mapping or nothing, got 3 — fix the value's type",
    ]
    assert messages(compile_source("title: T\nsteps:\n  - count: {count: many}\n", "u.yaml")) == [
        "u.yaml:3:20: t.count: parameter 'count': Input should be a valid integer, unable to parse string as an integer"
        " — got 'many'; `stepgraph steps` shows what t.count takes"
    ]


def test_a_number_where_text_is_expected_says_to_quote_it(compile_source: Callable[..., CompiledFile]) -> None:
    text = "title: T\nsteps:\n  - thing: {x: 300}\n"
    assert messages(compile_source(text, "q.yaml")) == [
        'q.yaml:3:16: t.thing: parameter \'x\' takes text, got the int 300 — quote it: "300"'
    ]


def test_units_are_checked(compile_source: Callable[..., CompiledFile]) -> None:
    text = HEADER + "  - baseline: {of: x, as: g}\n  - power_limit: {gpu: $g, equals: 200 V}\n"
    assert messages(compile_source(text, "t.yaml")) == [
        "t.yaml:4:36: t.power_limit: parameter 'equals': '200 V' is not a power — write it like 300 W or 300000 mW — got '200 V'"
    ]


def test_unknown_step_key_suggests_the_closest(compile_source: Callable[..., CompiledFile]) -> None:
    assert messages(compile_source(HEADER + "  - conut: {count: 1}\n  - frobnicate\n", "t.yaml")) == [
        "t.yaml:3:5: unknown step 'conut' — did you mean 'count'?",
        "t.yaml:4:5: unknown step 'frobnicate' — run `stepgraph steps` to list the steps",
    ]


def test_parameters_and_bindings_are_checked(compile_source: Callable[..., CompiledFile]) -> None:
    text = HEADER + (
        "  - count: {count: 1, as: n}\n"
        "  - baseline: {of: x, as: $g}\n"
        "  - count: {count: $n}\n"
        "  - count: {cuont: 1}\n"
        "  - expect: {within: 1 tick, all: [{apply: {manifest: m.yaml}}]}\n"
        "  - {}\n"
    )
    assert messages(compile_source(text, "t.yaml")) == [
        "t.yaml:3:5: t.count produces nothing to bind with `as` — remove `as`",
        "t.yaml:4:27: `as` takes a plain name, got '$g' — write `as: gpu` (no $)",
        "t.yaml:5:20: t.count: parameter 'count' does not take a binding ($n) — write a literal value",
        "t.yaml:6:5: t.count needs parameter 'count' — it takes: count",
        "t.yaml:6:20: t.count has no parameter 'cuont' — it takes: count",
        "t.yaml:7:37: `within` applies only to checks, and t.apply is a when-step — move it out of `within`/`expect`",
        "t.yaml:8:5: steps/5: a step is one key with its parameters — write `- key: {param: value}`; put `as:` inside the parameters",
    ]


def test_a_file_that_is_not_a_mapping(compile_source: Callable[..., CompiledFile]) -> None:
    assert messages(compile_source("- just\n- a list\n", "t.yaml")) == [
        "t.yaml:1:1: a scenario file is a mapping with `title` and `steps` (or `feature` and `scenarios`) — see docs/design/language.md"
    ]


def test_missing_required_keys(compile_source: Callable[..., CompiledFile]) -> None:
    assert messages(compile_source("feature: F\nscenarios:\n  - id: A\n", "t.yaml")) == [
        "t.yaml:3:5: scenarios/0: 'steps' is a required property — add it",
        "t.yaml:3:5: scenarios/0: 'title' is a required property — add it",
    ]


def test_deep_nesting_and_self_reference(compile_source: Callable[..., CompiledFile]) -> None:
    deep = HEADER + "  - bind: " + "[" * 5000 + "]" * 5000 + "\n"
    started = time.perf_counter()
    assert messages(compile_source(deep, "deep.yaml")) == ["deep.yaml:3:75: YAML nests deeper than 64 levels — flatten the document"]
    assert time.perf_counter() - started < 1
    spread = HEADER + "  - bind:\n" + "".join(f"      {'[' * 5}\n" for _ in range(20))
    assert messages(compile_source(spread, "spread.yaml")) == ["spread.yaml:16:11: YAML nests deeper than 64 levels — flatten the document"]
    [message] = messages(compile_source("a: &a [1, *a]\ntitle: T\nsteps: [count: {count: 1}]\n", "self.yaml"))
    assert message.startswith("self.yaml:1:1: ")
