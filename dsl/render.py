"""Feature IR → text: Gherkin (for pytest-bdd and `convert`) and YAML (for `convert`).

Both are built node by node from the IR, never from user-editable templates. Rendering then
loading gives back an equal IR (the round-trip tests hold this).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .ir import Feature, JointCheck, Scenario, Step, StepCall

INDENT = "  "


class RenderError(ValueError):
    """The IR holds something the target syntax cannot express."""


def to_gherkin(feature: Feature, extra_scenario_tags: Callable[[Scenario], list[str]] | None = None) -> str:
    lines: list[str] = []
    _tag_line(lines, feature.tags.as_gherkin(), "")
    lines.append(f"Feature: {_one_line(feature.name)}")
    lines += [f"{INDENT}{line}" if line else "" for line in feature.description.splitlines()]
    if feature.background:
        lines += ["", f"{INDENT}Background:"]
        lines += _gherkin_steps(feature.background)
    for scenario in feature.scenarios:
        lines.append("")
        extra = extra_scenario_tags(scenario) if extra_scenario_tags else []
        _tag_line(lines, scenario.tags.as_gherkin() + extra, INDENT)
        lines.append(f"{INDENT}Scenario: {_one_line(scenario.name)}")
        lines += [f"{INDENT * 2}{line}" if line else "" for line in scenario.description.splitlines()]
        lines += _gherkin_steps(scenario.steps)
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    if "\n" in text:
        raise RenderError(f"names are one line in Gherkin: {text!r}")
    return text


def _tag_line(lines: list[str], tags: list[str], indent: str) -> None:
    if tags:
        lines.append(indent + " ".join(f"@{t}" for t in tags))


def _gherkin_steps(calls: tuple[Step, ...]) -> list[str]:
    out, previous = [], None
    for call in calls:
        keyword = "then" if isinstance(call, JointCheck) else call.decl.keyword
        word = "And" if keyword == previous else keyword.capitalize()
        out.append(f"{INDENT * 2}{word} {call.text()}")
        out += _joint_lines(call, INDENT * 3) if isinstance(call, JointCheck) else _attachment_lines(call, INDENT * 3)
        previous = keyword
    return out


def _joint_lines(joint: JointCheck, indent: str) -> list[str]:
    """The checks of a joint check, one per line in the doc string below its header."""
    texts = [call.text() for call in joint.checks]
    fence = next((f for f in ('"""', "```") if not any(f in text for text in texts)), None)
    if fence is None:
        raise RenderError(f"a check judged together holds both \"\"\" and ``` in {texts!r}, which no doc string can hold")
    return [indent + fence, *(indent + text for text in texts), indent + fence]


def _attachment_lines(call: StepCall, indent: str) -> list[str]:
    """The data table or doc string under a step whose phrase takes one."""
    slot = call.decl.phrase.attachment
    if slot is None:
        return []
    value = call.params.model_dump(mode="json")[slot.field]
    if slot.type.name == "docstring":
        fence = '```' if '"""' in value else '"""'
        return [indent + fence, *(indent + line if line else "" for line in value.splitlines()), indent + fence]
    rows = [row if isinstance(row, dict) else {"value": row} for row in value]
    header = list(dict.fromkeys(key for row in rows for key in row)) or _row_fields(call, slot.field)
    if not header:
        raise RenderError(f"{call.step_id}: an empty data table has no header row to write")
    table = [header] + [[_cell(row.get(key)) for key in header] for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    return [indent + "| " + " | ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) + " |" for r in table]


def _row_fields(call: StepCall, field: str) -> list[str]:
    """The columns of an empty table: the fields of the row model its parameter is a list of."""
    import typing

    args = typing.get_args(type(call.params).model_fields[field].annotation)
    row = args[0] if args else None
    return list(getattr(row, "model_fields", {}))


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else "" if value is None else json.dumps(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "\\n")


def to_yaml(feature: Feature) -> str:
    from .render_yaml import to_yaml as render  # ruamel's emitter: only `convert --to yaml` needs it

    return render(feature)
