"""Step text or a YAML step key, with raw parameters → a validated StepCall (static checks 2 and 3)."""

from __future__ import annotations

import difflib
import re
from typing import Any

from pydantic import ValidationError

from .bindings import Ref, is_ref_text
from .diagnostics import Diagnostic, Location
from .ir import JointCheck, StepCall
from .phrases import BIND_FIELD, JOINT_PHRASE, UNIT_TYPES, Window, split_window, squeeze
from .registry import LaterStep, Registry, StepDecl
from .units import Duration

#: What a Gherkin step carries below its text: ("table", [row mappings]) or ("docstring", text).
Attachment = tuple[str, Any]
_ATTACHMENT_WORDS = {"table": "a data table", "docstring": "a doc string"}


def bind_text(
    registry: Registry, text: str, location: Location, attachment: Attachment | None = None
) -> tuple[StepCall | None, list[Diagnostic]]:
    """Gherkin step text (and its data table or doc string) → the one library step it names
    (undefined and ambiguous are errors)."""
    matches = registry.match(text)
    if not matches:
        window, rest = split_window(text)
        inner = registry.match(rest) if window is not None else []
        if len(inner) == 1 and window is not None:
            decl = inner[0].decl
            return None, [
                Diagnostic(
                    location,
                    f"`{window.mode}` applies only to checks, and {decl.id} is a {decl.keyword}-step",
                    f"drop the `{window.mode}` prefix",
                    "types",
                )
            ]
        if (unit := _unit_problem(registry, text)) is not None:
            return None, [Diagnostic(location, *unit, "types")]
        return None, [Diagnostic(location, f"undefined step: {text!r}", _suggest_phrase(registry, text), "binding")]
    if len(matches) > 1:
        ids = ", ".join(sorted(m.decl.id for m in matches))
        return None, [Diagnostic(location, f"ambiguous step: {text!r} matches {ids}", "reword the phrases so one matches", "binding")]
    [m] = matches
    raw = dict(m.raw)
    bind_as = raw.pop(BIND_FIELD, None)
    problem = attach(m.decl, raw, attachment)
    if problem is not None:
        return None, [Diagnostic(location, *problem, "types")]
    return make_call(m.decl, raw, location, bind_as=bind_as, window=m.window)


def joint_member_problem(decl: StepDecl, own_window: Window | None = None) -> tuple[str, str] | None:
    """Why a step cannot be one of the checks judged together in one window, as (what, what to do)."""
    if not decl.is_check:
        return (f"{decl.id} is a {decl.keyword}-step, and only checks are judged together", "move it before or after the group")
    if own_window is not None:
        return (f"a check judged together takes the group's window, not a `{own_window.mode}` of its own", f"remove `{own_window}`")
    if decl.phrase.attachment is not None:
        what = _ATTACHMENT_WORDS[decl.phrase.attachment.type.name]
        return (f"{decl.id} takes {what}, which a check judged together cannot carry", "check it in a step of its own")
    return None


def bind_joint(
    registry: Registry, window: Window, lines: list[tuple[str, Location]], location: Location
) -> tuple[JointCheck | None, list[Diagnostic]]:
    """The checks of a joint-check header (one step text per line, each with its location) → the
    group; every line that is not a check it can hold is an error at that line."""
    if (problem := window.duration.bound_problem()) is not None:
        what, _, hint = problem.partition(" — ")
        return None, [Diagnostic(location, f"`{window.mode}`: {what}", hint, "types")]
    if not lines:
        return None, [Diagnostic(location, f"`{window} {JOINT_PHRASE}` lists no checks", "write one check per line below it", "syntax")]
    calls, diags = [], []
    for text, where in lines:
        matches = registry.match(text)
        if len(matches) == 1 and (member := joint_member_problem(matches[0].decl, matches[0].window)) is not None:
            diags.append(Diagnostic(where, *member, "types"))
            continue
        call, more = bind_text(registry, text, where)
        diags += more
        if call is not None:
            calls.append(call)
    return (JointCheck(window, tuple(calls), location) if calls else None), diags


def attach(decl: StepDecl, raw: dict[str, Any], attachment: Attachment | None) -> tuple[str, str] | None:
    """Put the step's data table or doc string into `raw` under the field its phrase names, or say
    why it does not fit: a step that takes none, takes the other kind, or misses the one it takes."""
    slot = decl.phrase.attachment
    if slot is None:
        if attachment is None:
            return None
        return (f"{decl.id} takes no {_ATTACHMENT_WORDS[attachment[0]][2:]}", "remove it; every parameter of this step is in its phrase")
    wanted = _ATTACHMENT_WORDS[slot.type.name]
    if attachment is None:
        return (f"{decl.id} needs {wanted} below the step (parameter {slot.field!r})", _attachment_example(slot.type.name))
    if attachment[0] != slot.type.name:
        return (f"{decl.id} takes {wanted}, not {_ATTACHMENT_WORDS[attachment[0]]}", _attachment_example(slot.type.name))
    raw[slot.field] = attachment[1]
    return None


def _attachment_example(kind: str) -> str:
    if kind == "table":
        return "write its rows under the step as `| column | column |` lines, the first row naming the columns"
    return 'write the text under the step between two `"""` lines'



def make_call(
    decl: StepDecl,
    raw: dict[str, Any],
    location: Location,
    *,
    bind_as: str | None = None,
    window: Window | None = None,
    field_locations: dict[str, Location] | None = None,
) -> tuple[StepCall | None, list[Diagnostic]]:
    """Validate raw parameters against the step's model (static check 3)."""
    field_locations = field_locations or {}
    try:
        params = decl.params.model_validate(raw)
    except ValidationError as exc:
        return None, [
            _diagnostic(decl, raw, err, field_locations.get(str(err["loc"][0]) if err["loc"] else "", location)) for err in exc.errors()
        ]
    if window is not None and not decl.is_check:
        return None, [
            Diagnostic(
                location,
                f"`{window.mode}` applies only to checks, and {decl.id} is a {decl.keyword}-step",
                f"move it out of `{window.mode}`/`expect`",
                "types",
            )
        ]
    if window is not None and (problem := window.duration.bound_problem()) is not None:
        what, _, hint = problem.partition(" — ")
        return None, [Diagnostic(location, f"`{window.mode}`: {what}", hint, "types")]
    within = window.duration if window is not None and window.mode == "within" else None
    throughout = window.duration if window is not None and window.mode == "throughout" else None
    call = StepCall(decl=decl, step_id=decl.id, params=params, bind_as=bind_as, within=within, throughout=throughout, location=location)
    return call, []


#: What a placeholder type's text can hold, for values written in YAML that its Gherkin form cannot.
_HOLDS = {
    "word": ("a word: a letter or _, then letters, digits or _ . : / -", "write it as one word"),
    "list": (
        "a quoted list of comma-separated items, none empty, none holding a comma or starting or ending with a space",
        "split, join or trim the items",
    ),
    "bind": ("a binding name: a letter or _, then letters, digits or _", "write a name like gpu0"),
}


def gherkin_form_problem(registry: Registry, call: StepCall) -> tuple[str, str, str] | None:
    """Why the Gherkin text of a call bound from YAML would not read back as the same call, as
    (field, what is wrong, what to do); None when it does.

    pytest-bdd runs a YAML scenario from the Gherkin it is rendered to, and `convert` writes the
    same text: a value its placeholder's text cannot hold (`two words` for a `{what:word}`) would
    turn into a step that does not parse, or parses as another one."""
    decl = call.decl
    values: dict[str, Any] = {name: getattr(call.params, name) for name in type(call.params).model_fields}
    if call.bind_as is not None:
        values[BIND_FIELD] = call.bind_as
    for slot in decl.phrase.slots:
        text = slot.type.render(values[slot.field])
        parsed = slot.type.parse(text) if re.fullmatch(slot.type.pattern, text) else None
        if parsed is not None and (slot.field == BIND_FIELD or _same_value(call, slot.field, parsed)):
            continue
        holds, hint = _HOLDS.get(slot.type.name, (f"text matching {slot.type.pattern!r}", "change the value so it does"))
        shown = values[slot.field]
        return (slot.field, f"{decl.id}: parameter {slot.field!r} is {shown!r}, which its Gherkin phrase cannot write ({holds})", hint)
    others = sorted(m.decl.id for m in registry.match(call.text()) if m.decl is not decl)
    if others:
        what = f"{decl.id}: its Gherkin form {call.text()!r} also reads as {', '.join(others)}"
        return ("", what, "change a value so the step reads one way, or reword one of the phrases in its step library")
    return None


def _same_value(call: StepCall, field: str, parsed: Any) -> bool:
    """Whether the value read back from the Gherkin text validates to the value the call holds."""
    try:
        again = type(call.params).model_validate({**dict(call.params), field: parsed})
    except ValidationError:
        return False
    return bool(getattr(again, field) == getattr(call.params, field))


def _diagnostic(decl: StepDecl, raw: dict[str, Any], err: Any, location: Location) -> Diagnostic:
    field = ".".join(str(p) for p in err["loc"])
    value = err.get("input")
    fields = ", ".join(decl.params.model_fields) or "no parameters"
    if err["type"] == "extra_forbidden":
        return Diagnostic(location, f"{decl.id} has no parameter {field!r}", f"it takes: {fields}", "types")
    if err["type"] == "missing":
        return Diagnostic(location, f"{decl.id} needs parameter {field!r}", f"it takes: {fields}", "types")
    if (is_ref_text(value) or isinstance(value, Ref)) and "Ref" not in str(decl.params.model_fields[str(err["loc"][0])].annotation):
        return Diagnostic(location, f"{decl.id}: parameter {field!r} does not take a binding ({value})", "write a literal value", "types")
    message = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "string_type" and isinstance(value, int | float | bool):
        return Diagnostic(location, f"{decl.id}: parameter {field!r} takes text, got the {type(value).__name__} {value!r}",
                          f'quote it: "{value}"', "types")
    if "—" in message:  # our own validators already say what to write
        return Diagnostic(location, f"{decl.id}: parameter {field!r}: {message}", f"got {value!r}", "types")
    return Diagnostic(location, f"{decl.id}: parameter {field!r}: {message}",
                      f"got {value!r}; `stepgraph steps` shows what {decl.id} takes", "types")


def suggest_key(registry: Registry, key: str) -> str:
    close = difflib.get_close_matches(key, list(registry.by_key), n=3)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return "run `stepgraph steps` to list the steps"


_WINDOW_WORDS = re.compile(r"^(within|throughout)\s+(\d+(?:\.\d+)?\s*[^\W\d]+)((?:\s+[^\W\d]+)?)\s*,?\s+(.*)$", re.DOTALL)


def _unit_problem(registry: Registry, text: str) -> tuple[str, str] | None:
    """For a step text no phrase reads: a misspelt unit, in a window (`within 2 tiks …`) or in a
    power or duration parameter (`… is set to 310 w`), said with the unit's own message (which
    unit was meant), as (what is wrong, what to do); None when no unit explains it."""
    text = squeeze(text)
    candidates: list[tuple[str | None, str, str]] = [(None, "", text)]
    m = _WINDOW_WORDS.match(text)
    if m is not None:
        mode, one, more, rest = m.groups()
        # the unit may be one word (`2 tiks`) or two (`2 agent tiks`)
        candidates = [(mode, one + more, rest), (mode, one, f"{more.strip()} {rest}".strip()), *candidates]
    for mode, duration, rest in candidates:
        if mode is not None and re.fullmatch(r"all\s+of\s+these\s+hold\s+together\s*:?", rest):
            readers: list[StepDecl | LaterStep | None] = [None]  # the header of checks judged together
        else:
            readers = [d for d in registry.declared() if d.phrase.match(rest) is not None or d.phrase.loose_match(rest) is not None]
        if len(readers) != 1:
            continue
        [decl] = readers
        if mode is not None:
            try:
                Duration.parse(duration)
            except ValueError as exc:
                what, _, hint = str(exc).partition(" — ")
                return (f"`{mode}`: {what}", hint)
        if decl is None:
            continue
        kinds = {slot.field: slot.type.name for slot in decl.phrase.slots}
        for field, value in (decl.phrase.loose_match(rest) or {}).items():
            try:
                UNIT_TYPES[kinds[field]](value)
            except ValueError as exc:
                what, _, hint = str(exc).partition(" — ")
                return (f"{decl.id}: parameter {field!r}: {what}", hint)
    return None


def _suggest_phrase(registry: Registry, text: str) -> str:
    phrases = {d.phrase.text: d for d in registry.declared()}
    close = difflib.get_close_matches(text, list(phrases), n=1, cutoff=0.5)
    if close:
        return f"closest step: {phrases[close[0]].id} — {close[0]!r}"
    return "run `stepgraph steps` to list the steps, or declare a new one (docs/design/authoring-steps.md)"
