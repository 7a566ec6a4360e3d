"""Gherkin text that the parser accepts but that cannot be what the author meant.

The Gherkin grammar reads any line it does not recognise as description text. So a keyword typo
(`Givn …`), a keyword with an invisible character in it (`Back\\ufeffground:`), a step whose
keyword was left out, or steps under a deleted `Background:` line all become description, and the
steps silently never run. This module finds description lines that read like steps or keywords,
and blocks left without steps.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

from .close_match import close_match
from .diagnostics import Diagnostic, Location
from .registry import Registry

STEP_KEYWORDS = ("Given", "When", "Then", "And", "But")
BLOCK_KEYWORDS = ("Feature:", "Background:", "Scenario:", "Scenario Outline:", "Scenario Template:", "Example:", "Examples:", "Rule:")


def text_problems(text: str, feature: Mapping[str, Any], registry: Registry, display: str) -> list[Diagnostic]:
    """Description lines that read like steps or keywords, and scenarios/backgrounds without steps."""
    lines = text.splitlines()
    diags = []
    for node, kind in _blocks(feature):
        keyword_line = node["location"]["line"]
        for number, line in _description_lines(node.get("description") or "", lines, keyword_line):
            problem = _reads_like_gherkin(line, registry, in_feature=kind == "feature")
            if problem is not None:
                column = len(line) - len(line.lstrip()) + 1
                diags.append(Diagnostic(Location(display, number, column), *problem, "syntax"))
        if kind in ("scenario", "background") and not node.get("steps"):
            what = "Background" if kind == "background" else node.get("keyword", "Scenario").strip()
            diags.append(
                Diagnostic(
                    Location(display, keyword_line, node["location"].get("column") or 1),
                    f"the {what} has no steps",
                    "add its steps, each starting with Given, When, Then, And or But",
                    "syntax",
                )
            )
    return diags


def _blocks(feature: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], str]]:
    """Every node that can carry a description: the feature, rules, backgrounds, scenarios, examples."""
    yield feature, "feature"
    for child in feature.get("children", []):
        if "rule" in child:
            yield child["rule"], "rule"
            children = child["rule"].get("children", [])
        else:
            children = [child]
        for grandchild in children:
            for kind in ("background", "scenario"):
                if kind in grandchild:
                    yield grandchild[kind], kind
                    for examples in grandchild[kind].get("examples", []):
                        yield examples, "examples"


def _description_lines(description: str, lines: list[str], after: int) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank description line, found in order after the keyword line."""
    cursor = after  # 0-based index of the line after the keyword line
    for wanted in description.splitlines():
        if not wanted.strip():
            continue
        for index in range(cursor, len(lines)):
            if lines[index].rstrip() == wanted.rstrip():
                cursor = index + 1
                yield index + 1, lines[index]
                break


def _visible(text: str) -> str:
    """The text without format characters (zero-width spaces, byte-order marks, soft hyphens…)."""
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def _invisible(text: str) -> list[str]:
    return [f"U+{ord(c):04X}" for c in text if unicodedata.category(c) == "Cf"]


def _reads_like_gherkin(line: str, registry: Registry, *, in_feature: bool) -> tuple[str, str] | None:
    stripped = line.strip()
    visible = _visible(stripped)
    if visible != stripped and _starts_with_keyword(visible):
        keyword = _starts_with_keyword(visible)
        return (
            f"the keyword {keyword!r} contains invisible characters ({', '.join(_invisible(stripped))}), "
            "so this line and the steps under it are description text",
            f"retype it as `{keyword}`",
        )
    first, _, rest = visible.partition(" ")
    if first in STEP_KEYWORDS:
        where = "above the scenarios" if in_feature else "here"
        return (
            f"a step {where} is read as description text, so it never runs",
            "put it under a `Background:` or `Scenario:` line (was one deleted?)",
        )
    header = next((k for k in BLOCK_KEYWORDS if visible.lower().startswith(k.lower())), None)
    if header is not None:
        return (f"{visible.split(':', 1)[0]!r} is not written `{header}`, so it is read as description text", f"write `{header}`")
    if first.endswith(":"):
        close = difflib.get_close_matches(first, [k for k in BLOCK_KEYWORDS if " " not in k], n=1, cutoff=0.75)
        if close:
            return (f"{first!r} is not a Gherkin keyword, so this line is read as description text", f"did you mean `{close[0]}`?")
    close = difflib.get_close_matches(first, STEP_KEYWORDS, n=1, cutoff=0.75)
    if close and _step_like(rest, registry):
        return (
            f"{first!r} is not a Gherkin keyword, so this line is read as description text and the step never runs",
            f"did you mean `{close[0]}`?",
        )
    decl = _step_like(visible, registry)
    if decl is not None:
        keyword = decl.keyword.capitalize()
        return (
            f"this line reads like the step {decl.id} but has no keyword, so it is description text and never runs",
            f"start it with `{keyword}` (or `And`)",
        )
    return None


def _starts_with_keyword(text: str) -> str | None:
    for keyword in BLOCK_KEYWORDS:
        if text.startswith(keyword):
            return keyword
    first = text.split(" ", 1)[0]
    return first if first in STEP_KEYWORDS else None


def _step_like(text: str, registry: Registry) -> Any:
    """The declaration `text` names, exactly or closely (a step with a typo of its own), else None."""
    matches = registry.match(text)
    if matches:
        return matches[0].decl
    phrases = {d.phrase.text: d for d in registry.declared()}
    close = close_match(text, tuple(phrases), 0.75)
    return phrases[close] if close is not None else None


def keyword_hint(parser_message: str) -> str | None:
    """For the parser's "got 'Scenaro: T'": the keyword that was probably meant."""
    got = re.search(r"got '(.*)'$", parser_message)
    if got is None:
        return None
    first = _visible(got.group(1).strip()).split(" ", 1)[0]
    close = difflib.get_close_matches(first, [*STEP_KEYWORDS, *(k for k in BLOCK_KEYWORDS if " " not in k)], n=1, cutoff=0.75)
    return f"did you mean `{close[0]}`?" if close and close[0] != first else None
