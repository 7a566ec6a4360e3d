"""YAML scenario files → Feature IR, with line/column for every node (ruamel.yaml + jsonschema).

Safe by construction: ruamel's round-trip loader builds only maps, lists and scalars; duplicate
keys are errors; alias expansion is bounded; the structure is checked against the published
layout before any step is bound.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import ir
from .binder import gherkin_form_problem, joint_member_problem, make_call, suggest_key
from .bindings import is_ref_text
from .cache_dir import cache_root, installed_releases, keep_json, read_kept_json
from .diagnostics import Diagnostic, Location
from .gherkin_text import BLOCK_KEYWORDS, STEP_KEYWORDS
from .load_gherkin import description_text
from .phrases import Window
from .registry import Registry
from .schema import structure_schema
from .tags import OWNED_KINDS, tag_problem
from .units import Duration

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

Path_ = tuple[Any, ...]
#: Line starts that Gherkin reads as something other than description text
GHERKIN_LINE_STARTS = (*BLOCK_KEYWORDS, "@", "|", '"""', "```", "#")


@functools.cache
def _validator() -> Draft202012Validator:
    """The structure schema's validator, built on the first YAML file: jsonschema costs more to
    import than a lint of a Gherkin file takes in all."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(structure_schema())


def _nearest(positions: dict[Path_, Location], path: Path_) -> Location:
    """Where the key (or list item) at `path` is written, or its closest ancestor."""
    while path not in positions:
        path = path[:-1]
    return positions[path]


def _value_at(positions: dict[Path_, Location], path: Path_) -> Location:
    """Where the value at `path` is written (falls back to its key)."""
    return positions.get(("value", *path)) or _nearest(positions, path)


def load_yaml(text: str, display: str, registry: Registry) -> tuple[ir.Feature | None, list[Diagnostic]]:
    key = _structure_key(text)
    kept = _kept_structure(key, display)
    if kept is not None:
        data, positions = kept
    else:
        from .yaml_syntax import parse_yaml  # ruamel, and jsonschema below: only a file not read before needs them

        data, positions, diags = parse_yaml(text, display)
        if diags:
            return None, diags
        if not isinstance(data, dict):
            return None, [
                Diagnostic(
                    Location(display),
                    "a scenario file is a mapping with `title` and `steps` (or `feature` and `scenarios`)",
                    "see docs/design/language.md",
                    "syntax",
                )
            ]
        diags = [_schema_diagnostic(err, positions) for err in _validator().iter_errors(data) if not _expect_rule(err)]
        if diags:
            feature, more = _Builder(registry, positions, display, text.splitlines()).feature(data)
            return feature, diags + more
        _keep_structure(key, data, positions)
    feature, more = _Builder(registry, positions, display, text.splitlines()).feature(data)
    return feature, more


# A file's text, as shown, read into plain data with the place of every node and found to have
# the published layout: the same every time for the same text, and ruamel's pure-Python parser
# with jsonschema (imports and all) cost most of what loading a YAML file costs. So what a text
# cleanly reads into is kept on disk, named by the text and all that reads it: the modules of
# this package that parse, position and check it, the releases of ruamel.yaml, jsonschema and
# referencing, and the interpreter's. Positions are kept as line and column, and given the name the file is shown
# under when read back. A text with any syntax or layout error is never kept; it is read again
# and reported as ever.

_STRUCTURE_CODE = ("yaml_syntax.py", "load_yaml.py", "schema.py", "units.py", "bindings.py", "diagnostics.py")
_STRUCTURE_RELEASES = ("ruamel.yaml-", "ruamel_yaml-", "jsonschema-", "referencing-")


@functools.cache
def _structure_readers() -> bytes:
    key = hashlib.sha256(sys.version.encode())  # the interpreter's own regular expressions and int parsing read it too
    here = Path(__file__).parent
    for name in _STRUCTURE_CODE:
        key.update(name.encode() + b"\0" + (here / name).read_bytes())
    releases = {n for package in ("ruamel.yaml", "jsonschema", "referencing") for n in installed_releases(package, _STRUCTURE_RELEASES)}
    key.update("\0".join(sorted(releases)).encode())
    return key.digest()


def _structure_key(text: str) -> str:
    return hashlib.sha256(_structure_readers() + text.encode()).hexdigest()[:32]


def _structure_file(key: str) -> Path:
    return cache_root() / "yaml-structure" / f"{key}.json"


def _kept_structure(key: str, display: str) -> tuple[dict[str, Any], dict[Path_, Location]] | None:
    found = read_kept_json(_structure_file(key))
    if found is None:
        return None
    try:
        data = found["data"]
        positions = {tuple(path): Location(display, line, column) for path, line, column in found["positions"]}
    except (ValueError, KeyError, TypeError):  # JSON someone else wrote there: read the text instead
        return None
    return (data, positions) if isinstance(data, dict) else None


def _keep_structure(key: str, data: dict[str, Any], positions: dict[Path_, Location]) -> None:
    found = {"data": data, "positions": [[list(path), where.line, where.column] for path, where in positions.items()]}
    keep_json(_structure_file(key), found)


def _expect_rule(err: Any) -> bool:
    """A schema error about which keys an `expect` combines, or a window written as text that is
    not a duration: the loader says it in its own words (which unit was meant)."""
    path = tuple(err.absolute_path)
    if len(path) >= 2 and path[-2] == "expect" and path[-1] in ("within", "throughout"):
        return isinstance(err.instance, str)
    return bool(path) and path[-1] == "expect" and err.validator in ("not", "anyOf")


def _schema_diagnostic(err: Any, positions: dict[Path_, Location]) -> Diagnostic:
    path = tuple(err.absolute_path)
    where = _nearest(positions, path)
    field = "/".join(str(p) for p in path) or "the file"
    if err.validator == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        allowed = ", ".join(err.schema.get("properties", {}))
        if extra:
            where = _nearest(positions, (*path, extra[0]))
        return Diagnostic(where, f"unknown key {', '.join(map(repr, extra))} in {field}", f"allowed keys: {allowed}", "syntax")
    if err.validator == "required":
        return Diagnostic(where, f"{field}: {err.message}", "add it", "syntax")
    if err.validator in ("minProperties", "maxProperties"):
        return Diagnostic(
            where,
            f"{field}: a step is one key with its parameters",
            "write `- key: {param: value}`; put `as:` inside the parameters",
            "syntax",
        )
    if err.validator == "type":
        return Diagnostic(
            _value_at(positions, path),
            f"{field}: expected {_type_words(err.validator_value)}, got {err.instance!r}",
            "fix the value's type",
            "syntax",
        )
    return Diagnostic(_value_at(positions, path), f"{field}: {err.message}", "see docs/design/language.md", "syntax")


def _type_words(kind: Any) -> str:
    kinds = kind if isinstance(kind, list) else [kind]
    words = {
        "object": "a mapping",
        "array": "a list",
        "string": "a string",
        "null": "nothing",
        "number": "a number",
        "integer": "an integer",
        "boolean": "true/false",
    }
    return " or ".join(str(words.get(k, k)) for k in kinds)


class _Builder:
    """Plain data → IR, binding each step through the registry. It runs even when the schema
    found problems (so all errors of a file come at once) and skips whatever is malformed."""

    def __init__(self, registry: Registry, positions: dict[Path_, Location], display: str, lines: list[str]) -> None:
        self.registry, self.positions, self.display, self.lines = registry, positions, display, lines
        self.diags: list[Diagnostic] = []

    def feature(self, data: dict[str, Any]) -> tuple[ir.Feature | None, list[Diagnostic]]:
        background = self.steps(data.get("background"), ("background",))
        if "scenarios" in data:
            items = data["scenarios"] if isinstance(data["scenarios"], list) else []
            scenarios = tuple(self.scenario(s, ("scenarios", i)) for i, s in enumerate(items) if isinstance(s, dict))
            self.one_line_name(data, (), "feature")
            self.description(data, ())
            feature = ir.Feature(
                name=_text(data.get("feature")).strip(),
                tags=self.tags(data, ()),
                description=description_text(_text(data.get("description"))),
                background=background,
                scenarios=scenarios,
                location=Location(self.display),
                syntax="yaml",
            )
        else:
            scenario = self.scenario({k: v for k, v in data.items() if k != "background"}, ())
            feature = ir.Feature(
                name=scenario.name, background=background, scenarios=(scenario,), location=Location(self.display), syntax="yaml"
            )
        return feature, self.diags

    def one_line_name(self, data: dict[str, Any], path: Path_, key: str) -> None:
        """A title or feature name is one line of text: the Gherkin the collector writes from it
        has no way to continue a name on the next line."""
        name = data.get(key)
        if not isinstance(name, str) or not name:
            return  # the schema reported it
        if not name.strip():
            problem = (f"`{key}` is only spaces", "give it a name")
        elif "\n" in name.strip() or "\r" in name:
            problem = (f"`{key}` spans several lines", "make it one line; put the rest under `description:`")
        else:
            return
        self.diags.append(Diagnostic(_value_at(self.positions, (*path, key)), *problem, "syntax"))

    def description(self, data: dict[str, Any], path: Path_) -> None:
        """A description line that Gherkin would read as something else (a step, a keyword, a tag
        or table line, a comment) once the collector writes this file out as a feature."""
        text = data.get("description")
        if not isinstance(text, str):
            return
        for offset, line in enumerate(text.splitlines()):
            if not line.strip():
                continue
            first = line.strip().split(" ", 1)[0]
            keyword = next((k for k in GHERKIN_LINE_STARTS if line.strip().startswith(k)), None)
            if first in STEP_KEYWORDS or first == "*" or keyword is not None:
                where = start = _value_at(self.positions, (*path, "description"))
                for number in range(start.line, min(start.line + offset + 2, len(self.lines)) + 1):
                    column = self.lines[number - 1].find(line.strip())
                    if column >= 0 and number > start.line - 1 + offset:
                        where = Location(self.display, number, column + 1)
                        break
                self.diags.append(
                    Diagnostic(
                        where,
                        f"the description line {line.strip()!r} would be read as Gherkin, not as description text",
                        "reword the line so it does not start with a Gherkin keyword, @, |, # or quotes",
                        "syntax",
                    )
                )
                return

    def tags(self, data: dict[str, Any], path: Path_) -> ir.Tags:
        free = []
        listed = data.get("tags")
        for i, tag in enumerate(listed if isinstance(listed, list) else []):
            if not isinstance(tag, str):
                continue  # the schema reported it
            problem = tag_problem(tag)
            kind, colon, value = tag.partition(":")
            if problem is None and colon and kind in OWNED_KINDS:
                # the generated Gherkin would read it as the scenario's own id/design/needs, which
                # this YAML file does not have: the two syntaxes would mean different things
                hint = {"id": f"use the key: `id: {value}`", "source": "remove it: a generated feature gets its @source tag by itself"}
                problem = (f"{tag!r} is written as a tag", hint.get(kind, f"use the key: `{kind}: [{value}]`"))
            if problem is not None:
                self.diags.append(Diagnostic(_nearest(self.positions, (*path, "tags", i)), *problem, "tags"))
            else:
                free.append(tag)
        listed_needs = data.get("needs")
        written_at = tuple(
            (f"needs:{need}", _nearest(self.positions, (*path, "needs", i)))
            for i, need in enumerate(listed_needs if isinstance(listed_needs, list) else [])
            if isinstance(need, str)
        )
        return ir.Tags(
            id=_text(data.get("id")) or None,
            design=_texts(data.get("design")),
            needs=_texts(listed_needs),
            other=tuple(free),
            written_at=written_at,
        )

    def scenario(self, data: dict[str, Any], path: Path_) -> ir.Scenario:
        if data.get("steps") == [] or ("steps" in data and data["steps"] is None):
            self.diags.append(
                Diagnostic(
                    _nearest(self.positions, (*path, "steps")),
                    "the scenario has no steps",
                    "list its steps under `steps:`, one `- key: {params}` per line",
                    "syntax",
                )
            )
        self.one_line_name(data, path, "title")
        self.description(data, path)
        return ir.Scenario(
            name=_text(data.get("title")).strip(),
            tags=self.tags(data, path),
            description=description_text(_text(data.get("description"))),
            steps=self.steps(data.get("steps"), (*path, "steps")),
            location=_nearest(self.positions, (*path, "title")),
        )

    def steps(self, items: Any, path: Path_) -> tuple[ir.Step, ...]:
        return tuple(self._calls(items if isinstance(items, list) else [], path, window=None))

    def expect(self, value: dict[str, Any], path: Path_, outer: Window | None) -> Iterator[ir.Step]:
        """`expect: {within|throughout: <d>, all: [checks]}` → each check under its own window, in
        turn; `expect: {within|throughout: <d>, together: [checks]}` → one joint check."""
        where = self.positions[path]
        if outer is not None:
            self.diags.append(Diagnostic(where, "`expect` cannot nest", "flatten it", "syntax"))
            return
        modes = [mode for mode in ("within", "throughout") if mode in value]
        lists = [name for name in ("all", "together") if name in value]
        problem = None
        if len(modes) > 1:
            problem = (
                "`expect` has both `within` and `throughout`",
                "give it one window: `within` (comes to hold) or `throughout` (holds all along)",
            )
        elif not lists:
            problem = ("`expect` lists no checks", "list them under `all` (each comes to hold in turn) or `together` (all hold at once)")
        elif len(lists) > 1:
            problem = (
                "`expect` has both `all` and `together`",
                "give it one: `all` (each check in its own window, in turn) or `together` (one joint window)",
            )
        elif lists == ["together"] and not modes:
            problem = (
                "`together` needs a window",
                "add `within: <duration>` (all hold at one observation) or `throughout: <duration>` (all hold at every observation)",
            )
        if problem is not None:
            self.diags.append(Diagnostic(where, *problem, "syntax"))
            return
        if not isinstance(value[lists[0]], list):
            return  # the schema reported it
        try:
            window = Window(modes[0], Duration.parse(value[modes[0]])) if modes else None
        except ValueError as exc:
            number = value[modes[0]]
            if not isinstance(number, str | int | float) or isinstance(number, bool) or (not isinstance(number, str) and number < 0):
                return  # the schema reported it
            bound: str | None = str(exc)  # a misspelt unit; NaN and infinity pass the schema's `minimum: 0`
        else:
            bound = window.duration.bound_problem() if window is not None else None
        if bound is not None:
            what, _, hint = bound.partition(" — ")
            self.diags.append(Diagnostic(_value_at(self.positions, (*path, "expect", modes[0])), f"`{modes[0]}`: {what}", hint, "syntax"))
            return
        items_path = (*path, "expect", lists[0])
        if lists == ["all"]:
            yield from self._calls(value["all"], items_path, window=window)
            return
        assert window is not None
        checks: list[ir.StepCall] = []
        for i, item in enumerate(value["together"]):
            item_path = (*items_path, i)
            if (step := _step_item(item)) is None:
                continue  # the schema reported it
            key, params = step
            if key == "expect":
                self.diags.append(Diagnostic(self.positions[item_path], "`expect` cannot nest", "flatten it", "syntax"))
                continue
            decl = self.registry.by_key.get(key)
            if decl is not None and (member := joint_member_problem(decl)) is not None:
                self.diags.append(Diagnostic(_nearest(self.positions, (*item_path, key)), *member, "types"))
                continue
            if params is not None and not isinstance(params, dict):
                continue  # the schema reported it
            call = self._call(key, params, item_path, None)
            if call is not None:
                checks.append(call)
        if checks:
            yield ir.JointCheck(window, tuple(checks), where)

    def _calls(self, items: list[Any], path: Path_, window: Window | None) -> Iterator[ir.Step]:
        for i, item in enumerate(items):
            item_path = (*path, i)
            if (step := _step_item(item)) is None:
                continue  # the schema reported it
            key, value = step
            if key == "expect":
                if isinstance(value, dict):
                    yield from self.expect(value, item_path, window)
                continue
            if value is not None and not isinstance(value, dict):
                continue
            call = self._call(key, value, item_path, window)
            if call is not None:
                yield call

    def _call(self, key: str, value: dict[str, Any] | None, path: Path_, window: Window | None) -> ir.StepCall | None:
        where = _nearest(self.positions, (*path, key))
        decl = self.registry.by_key.get(key)
        if decl is None:
            self.diags.append(Diagnostic(where, f"unknown step {key!r}", suggest_key(self.registry, key), "binding"))
            return None
        raw = dict(value or {})
        bind_as = raw.pop("as", None)
        if bind_as is not None and decl.produces is None:
            self.diags.append(Diagnostic(where, f"{decl.id} produces nothing to bind with `as`", "remove `as`", "types"))
            return None
        if bind_as is not None and (not isinstance(bind_as, str) or is_ref_text(bind_as)):
            self.diags.append(
                Diagnostic(
                    _value_at(self.positions, (*path, key, "as")),
                    f"`as` takes a plain name, got {bind_as!r}",
                    "write `as: gpu` (no $)",
                    "types",
                )
            )
            return None
        fields = {name: _value_at(self.positions, (*path, key, name)) for name in raw}
        slot = decl.phrase.attachment
        for name, item in raw.items():
            if slot is not None and name == slot.field:
                continue  # a doc string or table: several lines are its point
            if any("\n" in text or "\r" in text for text in _strings(item)):
                # the Gherkin written from this file would break the step over several lines
                problem = f"{decl.id}: parameter {name!r} spans several lines"
                self.diags.append(Diagnostic(fields[name], problem, "make it one line", "types"))
                return None
        call, diags = make_call(decl, raw, where, bind_as=bind_as, window=window, field_locations=fields)
        self.diags += diags
        if call is not None and (unwritable := gherkin_form_problem(self.registry, call)) is not None:
            field, what, hint = unwritable
            place = _value_at(self.positions, (*path, key, field)) if field else where
            self.diags.append(Diagnostic(place, what, hint, "types"))
            return None
        return call


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _step_item(item: Any) -> tuple[str, Any] | None:
    """One item of a step list, `key` alone or `{key: params}`, as (key, params or None); None for
    any other shape (the schema reports it)."""
    if isinstance(item, str):
        return item, None
    if isinstance(item, dict) and len(item) == 1:
        key, params = next(iter(item.items()))
        return key, params
    return None


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _strings(value: Any) -> Iterator[str]:
    """Every text inside a parameter value (lists and mappings included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
