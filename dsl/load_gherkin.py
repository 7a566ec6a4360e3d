"""Gherkin `.feature` files → Feature IR, through gherkin-official (the parser pytest-bdd uses)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from . import ir
from .binder import Attachment, bind_joint, bind_text
from .cache_dir import cache_root, keep_json, parser_release, read_kept_json
from .diagnostics import Diagnostic, Location
from .gherkin_text import keyword_hint, text_problems
from .phrases import JOINT_PHRASE, Window, joint_window
from .registry import Registry
from .tags import tag_problem


def parse_tags(raw: list[str], where: Location | list[Location]) -> tuple[ir.Tags, list[Diagnostic]]:
    """`id:B5`, `design:8.5.7`, `needs:nvml` and plain tags (without the @) → Tags. `where` is
    each tag's location, or one location for all of them."""
    ids, design, needs, other, diags = [], [], [], [], []
    places = where if isinstance(where, list) else [where] * len(raw)
    for tag, place in zip(raw, places, strict=True):
        problem = tag_problem(tag)
        if problem is not None:
            diags.append(Diagnostic(place, *problem, "tags"))
            continue
        kind, _, value = tag.partition(":")
        if kind == "id" and value:
            ids.append(value)
        elif kind == "design" and value:
            design.append(value)
        elif kind == "needs" and value:
            needs.append(value)
        else:
            other.append(tag)
    if len(ids) > 1:
        diags.append(Diagnostic(places[0], f"more than one id: {', '.join(ids)}", "give each scenario one @id", "duplicates"))
    tags = ir.Tags(id=ids[0] if ids else None, design=tuple(design), needs=tuple(needs), other=tuple(other),
                   written_at=tuple(zip(raw, places, strict=True)))
    return tags, diags


#: A Scenario Outline placeholder: `<column>`.
_PLACEHOLDER = re.compile(r"<([^<>\s][^<>]*)>")


def substitute(text: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        text = text.replace(f"<{name}>", value)
    return text


def substitute_step(step: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    """One outline step with `<column>` replaced in its text, data table cells and doc string."""
    out = {**step, "text": substitute(step["text"], values)}
    if "dataTable" in step:
        rows = [
            {**row, "cells": [{**cell, "value": substitute(cell["value"], values)} for cell in row["cells"]]}
            for row in step["dataTable"]["rows"]
        ]
        out["dataTable"] = {**step["dataTable"], "rows": rows}
    if "docString" in step:
        out["docString"] = {**step["docString"], "content": substitute(step["docString"]["content"], values)}
    return out


def attachment_of(step: dict[str, Any]) -> Attachment | None:
    """A parsed step's data table (one mapping per row, keyed by the header row) or doc string."""
    if "dataTable" in step:
        header, *body = [[cell["value"] for cell in row["cells"]] for row in step["dataTable"]["rows"]]
        return ("table", [dict(zip(header, row, strict=True)) for row in body])
    if "docString" in step:
        return ("docstring", step["docString"]["content"])
    return None


def description_text(text: str) -> str:
    return "\n".join(line.strip() for line in text.strip().splitlines())


@functools.lru_cache(maxsize=8)
def parse_document(text: str) -> dict[str, Any]:
    """The gherkin-official document of a `.feature` text, parsed once however many readers it has.

    Collection reads each file three times (compile, line maps and tags, pytest-bdd's scenarios);
    the parse is the largest part of that, so they share one. A few recent texts are kept: a
    file is compiled and then collected straight away. Keyed by the text itself, so an edited
    file is never served stale. Readers must not change the document."""
    key = _document_key(text)
    if key is not None and (kept := _kept_document(key)) is not None:
        return kept
    from gherkin.parser import Parser  # only a text not read before needs the parser

    doc = cast("dict[str, Any]", Parser().parse(text))
    if key is not None:
        keep_json(_document_file(key), doc)
    return doc


# The parse is the same every time for the same text and parser, and gherkin's pure-Python parser
# costs more than all else compiling a file does. So what a text parses into (plain JSON data) is
# kept on disk, named by the text, gherkin-official's release and the interpreter's. A text that
# does not parse raises, and so is never kept: it is parsed again and reported as ever. Without
# a release to name the parser by (gherkin not installed as a distribution), nothing is kept.


def _document_key(text: str) -> str | None:
    release = parser_release("gherkin", ("gherkin_official-",))
    return hashlib.sha256(release + text.encode()).hexdigest()[:32] if release is not None else None


def _document_file(key: str) -> Path:
    return cache_root() / "gherkin-document" / f"{key}.json"


def _kept_document(key: str) -> dict[str, Any] | None:
    doc = read_kept_json(_document_file(key))
    return doc if isinstance(doc, dict) else None  # anything else there is someone else's file: parse the text


def load_gherkin(text: str, display: str, registry: Registry) -> tuple[ir.Feature | None, list[Diagnostic]]:
    try:
        doc = parse_document(text)
    except Exception as exc:  # only a parse raises, so gherkin is imported by then
        from gherkin.errors import CompositeParserException, ParserError

        if isinstance(exc, CompositeParserException):
            return None, [_parse_diag(e, display) for e in exc.errors]
        if isinstance(exc, ParserError):
            return None, [_parse_diag(exc, display)]
        raise
    feature = doc.get("feature")
    if not feature:
        return None, [Diagnostic(Location(display), "no Feature in this file", "start it with `Feature: <name>`", "syntax")]
    feature_ir, diags = _Builder(registry, display).feature(feature)
    return feature_ir, text_problems(text, feature, registry, display) + diags


def _parse_diag(exc: Any, display: str) -> Diagnostic:
    loc = getattr(exc, "location", None) or {}
    message = str(exc)
    if message.startswith("("):
        message = message.split(": ", 1)[-1]
    return Diagnostic(
        Location(display, loc.get("line", 1), loc.get("column") or 1),
        f"Gherkin syntax: {message}",
        keyword_hint(message) or "fix the keyword or indentation at that line",
        "syntax",
    )


class _Builder:
    def __init__(self, registry: Registry, display: str) -> None:
        self.registry, self.display = registry, display
        self.diags: list[Diagnostic] = []
        self.names: dict[str, dict[str, Any]] = {}  # scenario or outline name → its first node

    def loc(self, node: Mapping[str, Any]) -> Location:
        return Location(self.display, node["location"]["line"], node["location"].get("column") or 1)

    def tags(self, node: Mapping[str, Any], inherited: list[Mapping[str, Any]] | None = None) -> ir.Tags:
        raw = [*(inherited or []), *node.get("tags", [])]
        tags, diags = parse_tags([t["name"].removeprefix("@") for t in raw], [self.loc(t) for t in raw])
        self.diags += diags
        return tags

    def feature(self, node: Mapping[str, Any]) -> tuple[ir.Feature | None, list[Diagnostic]]:
        background: tuple[ir.Step, ...] = ()
        scenarios: list[ir.Scenario] = []
        for child in node.get("children", []):
            if "background" in child:
                background = self.steps(child["background"]["steps"])
            elif "scenario" in child:
                scenarios += self.scenarios(child["scenario"])
            elif "rule" in child:
                scenarios += self.rule(child["rule"])
        if not scenarios and not self.diags:
            self.diags.append(Diagnostic(self.loc(node), "the feature has no scenarios", "add a `Scenario:`", "syntax"))
        feature = ir.Feature(
            name=node["name"],
            tags=self.tags(node),
            description=description_text(node.get("description", "")),
            background=background,
            scenarios=tuple(scenarios),
            location=self.loc(node),
            syntax="gherkin",
        )
        return feature, self.diags

    def unique_name(self, node: dict[str, Any]) -> None:
        """pytest-bdd keeps a feature's scenarios by name, rules included, so of two blocks with one
        name only the last runs. Two plain Scenarios are caught later, on the IR (both syntaxes);
        an Outline's rows carry their row in the name, so the clash is found here."""
        first = self.names.setdefault(node["name"], node)
        if first is node or (not node.get("examples") and not first.get("examples")):
            return
        self.diags.append(
            Diagnostic(
                self.loc(node),
                f"the {node['keyword'].strip()} {node['name']!r} has the name of the {first['keyword'].strip()} at line "
                f"{first['location']['line']}, so only one of them would run",
                "give each its own name",
                "duplicates",
            )
        )

    def rule(self, node: dict[str, Any]) -> list[ir.Scenario]:
        """A `Rule:` → its scenarios, each with the rule's tags and Background steps (run after the
        feature's Background, as pytest-bdd runs them). The IR has no rule level, so the YAML
        equivalent is those scenarios written out."""
        background: tuple[ir.Step, ...] = ()
        scenarios: list[ir.Scenario] = []
        for child in node.get("children", []):
            if "background" in child:
                background = self.steps(child["background"]["steps"])
        for child in node.get("children", []):
            if "scenario" in child:
                scenarios += self.scenarios(child["scenario"], node, background)
        if not scenarios:
            where = self.loc(node)
            self.diags.append(Diagnostic(where, f"the Rule {node['name']!r} has no scenarios", "add a `Scenario:` under it", "syntax"))
        return scenarios

    def scenarios(
        self, node: dict[str, Any], rule: dict[str, Any] | None = None, rule_steps: tuple[ir.Step, ...] = ()
    ) -> list[ir.Scenario]:
        """A Scenario → [it]; a Scenario Outline → one scenario per example row."""
        self.unique_name(node)
        if node.get("examples"):
            return self.outline(node, rule, rule_steps)
        return [
            ir.Scenario(
                name=node["name"],
                tags=self.tags(node, rule.get("tags", []) if rule else []),
                description=description_text(node.get("description", "")),
                steps=rule_steps + self.steps(node["steps"]),
                location=self.loc(node),
                rule=rule["name"] if rule else None,
            )
        ]

    def outline(
        self, node: dict[str, Any], rule: dict[str, Any] | None = None, rule_steps: tuple[ir.Step, ...] = ()
    ) -> list[ir.Scenario]:
        """A Scenario Outline → one scenario per example row, `<name>` replaced by the row's value."""
        rows = []
        for examples in node["examples"]:
            header = [cell["value"] for cell in examples.get("tableHeader", {}).get("cells", [])]
            tags = examples.get("tags", [])
            rows += [
                (dict(zip(header, (c["value"] for c in row["cells"]), strict=True)), tags, row) for row in examples.get("tableBody", [])
            ]
        if not rows:
            self.diags.append(
                Diagnostic(self.loc(node), "the Scenario Outline has no example rows", "add rows under `Examples:`", "syntax")
            )
        base_tags = [*(rule.get("tags", []) if rule else []), *node.get("tags", [])]
        expanded = []
        for number, (values, example_tags, row) in enumerate(rows, 1):
            tag_nodes = base_tags + example_tags
            tags, diags = parse_tags([t["name"].removeprefix("@") for t in tag_nodes], [self.loc(t) for t in tag_nodes])
            self.diags += diags
            if tags.id is not None:  # each row is a scenario of its own, so it gets an id of its own
                tags = dataclasses.replace(tags, id=f"{tags.id}.{number}")
            steps = [substitute_step(step, values) for step in node["steps"] if not self.unfilled(step, values)]
            expanded.append(
                ir.Scenario(
                    name=f"{node['name']} [{'-'.join(values.values())}]",
                    tags=tags,
                    description=description_text(node.get("description", "")),
                    steps=rule_steps + self.steps(steps),
                    location=self.loc(row),
                    outline=node["name"],
                    example=tuple(values.items()),
                    rule=rule["name"] if rule else None,
                )
            )
        return expanded

    def unfilled(self, step: dict[str, Any], values: dict[str, str]) -> bool:
        """Whether an outline step names a `<placeholder>` that the row has no column for (then it
        is an error at the step: it would otherwise run with the placeholder's text as a value)."""
        texts = [step["text"], step.get("docString", {}).get("content", "")]
        texts += [cell["value"] for row in step.get("dataTable", {}).get("rows", []) for cell in row["cells"]]
        missing = sorted({name for text in texts for name in _PLACEHOLDER.findall(text)} - set(values))
        for name in missing:
            columns = ", ".join(values) or "none"
            self.diags.append(
                Diagnostic(
                    self.loc(step),
                    f"`<{name}>` is not a column of this outline's Examples (columns: {columns})",
                    "name one of the columns, or add the column to the Examples table",
                    "syntax",
                )
            )
        return bool(missing)

    def steps(self, nodes: list[dict[str, Any]]) -> tuple[ir.Step, ...]:
        calls: list[ir.Step] = []
        if nodes and nodes[0].get("keywordType") not in ("Context", "Action", "Outcome"):
            # `And`, `But` and `*` take their kind from the step before; pytest-bdd refuses a block
            # that starts with one (while collecting), so it is refused here, where it has a position
            keyword = nodes[0]["keyword"].strip()
            self.diags.append(
                Diagnostic(
                    self.loc(nodes[0]),
                    f"the first step of a block starts with `{keyword}`, which continues a step before it",
                    "start it with Given, When or Then",
                    "syntax",
                )
            )
        for node in nodes:
            step: ir.Step | None
            window = joint_window(node["text"])
            if window is not None:
                step, diags = self.joint(node, window)
            else:
                step, diags = bind_text(self.registry, node["text"], self.loc(node), attachment_of(node))
            self.diags += diags
            if step is not None:
                calls.append(step)
        return tuple(calls)

    def joint(self, node: dict[str, Any], window: Window) -> tuple[ir.JointCheck | None, list[Diagnostic]]:
        """`Then within <d> all of these hold together:` with its checks in the doc string below,
        one per line; each line keeps its own position in the file."""
        where = self.loc(node)
        doc = node.get("docString")
        if doc is None:
            what = "a data table" if "dataTable" in node else "nothing"
            return None, [
                Diagnostic(
                    where,
                    f"`{window} {JOINT_PHRASE}` has {what} below it",
                    'write its checks below it between two `"""` lines, one check per line',
                    "syntax",
                )
            ]
        line, column = doc["location"]["line"], doc["location"].get("column") or 1
        lines = [
            (text.strip(), Location(self.display, line + 1 + offset, column + len(text) - len(text.lstrip())))
            for offset, text in enumerate(doc["content"].splitlines())
            if text.strip()
        ]
        return bind_joint(self.registry, window, lines, where)
