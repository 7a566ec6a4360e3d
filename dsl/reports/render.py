"""The trace dict → trace.md (fits a PR comment), trace.html (one self-contained page), trace.json."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from stepgraph.dsl.reports.results import write_atomically
from stepgraph.dsl.reports.trace import FAILING

PR_COMMENT_LIMIT = 65_000  # GitHub refuses comments over 65,536 characters
MD_LIST_LIMIT = 50  # per list in the Markdown; the HTML and JSON have them all
ICONS = {"passed": "✅", "failed": "❌", "error": "💥", "undefined": "❓", "skipped": "⏭️", "uncovered": "·",
         "failing": "❌"}
PRECEDENCE = ("error", "failed", "undefined", "passed", "skipped")


def cell(row: dict[str, Any], column: str) -> str:
    """The worst outcome among a requirement's scenarios in one target/world column ('' if none ran there)."""
    outcomes = {link["results"][column]["outcome"] for link in row["links"] if column in link["results"]}
    return next((o for o in PRECEDENCE if o in outcomes), "")


def failures(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per failing (scenario, target/world), with every requirement it claims across the documents."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for number, doc in enumerate(trace["documents"], start=1):
        for row in doc["requirements"]:
            for link in row["links"]:
                for column, result in link["results"].items():
                    if result["outcome"] in FAILING:
                        entry = found.setdefault((link["scenario"], column), {
                            "scenario": link["scenario"], "column": column, "refs": [], **result})
                        if row["id"] not in [ref["id"] for ref in entry["refs"]]:
                            entry["refs"].append({"id": row["id"], "doc": number})
    return list(found.values())


@cache  # templates compile once per process
def _environment(autoescape: bool) -> Environment:
    env = Environment(loader=PackageLoader("stepgraph.dsl.reports", "templates"), autoescape=autoescape,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.globals.update(cell=cell, icons=ICONS, failures=failures)
    env.filters["md"] = _markdown_inline
    env.globals["limit"] = MD_LIST_LIMIT
    return env


def load_templates() -> None:
    """Compile the trace's templates now rather than at their first render (the environment keeps them)."""
    _environment(autoescape=False).get_template("trace.md")
    _environment(autoescape=True).get_template("trace.html")


def _markdown_inline(text: object) -> str:
    """Free text (failure messages, titles) safe inside a Markdown table cell or list item of a PR comment."""
    return (str(text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|").replace("\n", " "))


def render_markdown(trace: dict[str, Any]) -> str:
    text = _environment(autoescape=False).get_template("trace.md").render(trace=trace, full=True)
    if len(text) > PR_COMMENT_LIMIT:  # drop the full table, keep the summary and the problems
        text = _environment(autoescape=False).get_template("trace.md").render(trace=trace, full=False)
    return text


def render_html(trace: dict[str, Any]) -> str:
    return _environment(autoescape=True).get_template("trace.html").render(trace=trace)


def write(trace: dict[str, Any], fmt: str, path: Path) -> None:
    if fmt == "md":
        text = render_markdown(trace)
    elif fmt == "html":
        text = render_html(trace)
    else:
        text = json.dumps(trace, indent=1, ensure_ascii=False) + "\n"
    write_atomically(path, text)
