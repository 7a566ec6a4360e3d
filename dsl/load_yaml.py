"""YAML scenario files → Feature IR, with line/column for every node (ruamel.yaml + jsonschema).

Safe by construction: ruamel's round-trip loader builds only maps, lists and scalars; duplicate
keys are errors; alias expansion is bounded; the structure is checked against the published
layout before any step is bound.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from . import ir
from .binder import make_call, suggest_key
from .bindings import is_ref_text
from .diagnostics import Diagnostic, Location
from .load_gherkin import description_text
from .phrases import Window
from .registry import Registry
from .schema import structure_schema
from .tags import tag_problem
from .units import Duration

MAX_NODES = 100_000
MAX_DEPTH = 64
Path_ = tuple[Any, ...]

_VALIDATOR = Draft202012Validator(structure_schema())


class _TooLarge(Exception):
    pass


def parse_yaml(text: str, display: str) -> tuple[Any, dict[Path_, Location], list[Diagnostic]]:
    """Text → plain data plus the location of every node (by path), or a syntax diagnostic."""
    too_deep = _too_deep(text, display)
    if too_deep is not None:
        return None, {}, [Diagnostic(too_deep, f"YAML nests deeper than {MAX_DEPTH} levels", "flatten the document", "syntax")]
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        doc = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Location(display, mark.line + 1, mark.column + 1) if mark else Location(display)
        problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        return None, {}, [Diagnostic(where, f"YAML syntax: {problem}", _yaml_hint(problem), "syntax")]
    except YAMLError as exc:
        return None, {}, [Diagnostic(Location(display), f"YAML syntax: {' '.join(str(exc).split())}", "fix the YAML", "syntax")]
    except RecursionError:
        return None, {}, [Diagnostic(Location(display), "YAML nests too deeply", "flatten the document", "syntax")]
    positions: dict[Path_, Location] = {(): Location(display)}
    budget = [MAX_NODES]
    try:
        if _expanded_size(doc, {}) > MAX_NODES:  # measured without expanding: an alias bomb costs nothing
            raise _TooLarge
        data = _plain(doc, (), positions, display, budget)
    except _TooLarge:
        return (
            None,
            {},
            [
                Diagnostic(
                    Location(display),
                    f"YAML aliases expand to more than {MAX_NODES} nodes",
                    "remove the anchors (&) and aliases (*) and write the steps out",
                    "syntax",
                )
            ],
        )
    except RecursionError:
        return None, {}, [Diagnostic(Location(display), "YAML nests too deeply", "flatten the document", "syntax")]
    return data, positions, []


def _too_deep(text: str, display: str) -> Location | None:
    """Where flow brackets or block indentation nest past MAX_DEPTH (checked before parsing,
    because the parser itself is slow to fail on pathological nesting)."""
    depth = 0  # flow collections may span lines
    for number, line in enumerate(text.splitlines(), 1):
        indent = len(line) - len(line.lstrip(" "))
        if indent > 2 * MAX_DEPTH:
            return Location(display, number, indent + 1)
        quote = ""
        for column, char in enumerate(line, 1):
            if quote:
                quote = "" if char == quote else quote
            elif char in "\"'":
                quote = char
            elif char == "#":
                break
            elif char in "[{":
                depth += 1
                if depth > MAX_DEPTH:
                    return Location(display, number, column)
            elif char in "]}":
                depth = max(depth - 1, 0)
    return None


def _expanded_size(node: Any, memo: dict[int, int]) -> int:
    """How many nodes `node` becomes once aliases are expanded; each distinct node is visited once."""
    key = id(node)
    if key not in memo:
        memo[key] = 0  # a cycle counts as empty here; _plain's budget and recursion guard stop it
        children = node.values() if isinstance(node, CommentedMap) else node if isinstance(node, CommentedSeq) else ()
        memo[key] = 1 + sum(_expanded_size(child, memo) for child in children)
    return memo[key]


def _yaml_hint(problem: str) -> str:
    if "\\t" in problem or "tab" in problem:
        return "indent with spaces, not tabs"
    if "duplicate key" in problem:
        return "each key may appear once per mapping"
    return "fix the YAML at that position"


def _plain(node: Any, path: Path_, positions: dict[Path_, Location], display: str, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooLarge
    if isinstance(node, CommentedMap):
        out = {}
        for key in node:
            line, col = node.lc.key(key)
            positions[(*path, str(key))] = Location(display, line + 1, col + 1)
            vline, vcol = node.lc.value(key)
            positions[("value", *path, str(key))] = Location(display, vline + 1, vcol + 1)
            out[str(key)] = _plain(node[key], (*path, str(key)), positions, display, budget)
        return out
    if isinstance(node, CommentedSeq):
        out_list = []
        for i, item in enumerate(node):
            line, col = node.lc.item(i)
            positions[(*path, i)] = Location(display, line + 1, col + 1)
            out_list.append(_plain(item, (*path, i), positions, display, budget))
        return out_list
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return str(node)  # dates and other scalars: text, so the schema can say what it expected


def _nearest(positions: dict[Path_, Location], path: Path_) -> Location:
    """Where the key (or list item) at `path` is written, or its closest ancestor."""
    while path not in positions:
        path = path[:-1]
    return positions[path]


def _value_at(positions: dict[Path_, Location], path: Path_) -> Location:
    """Where the value at `path` is written (falls back to its key)."""
    return positions.get(("value", *path)) or _nearest(positions, path)


def load_yaml(text: str, display: str, registry: Registry) -> tuple[ir.Feature | None, list[Diagnostic]]:
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
    diags = [_schema_diagnostic(err, positions) for err in _VALIDATOR.iter_errors(data)]
    feature, more = _Builder(registry, positions, display).feature(data)
    return feature, diags + more


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

    def __init__(self, registry: Registry, positions: dict[Path_, Location], display: str) -> None:
        self.registry, self.positions, self.display = registry, positions, display
        self.diags: list[Diagnostic] = []

    def feature(self, data: dict[str, Any]) -> tuple[ir.Feature | None, list[Diagnostic]]:
        background = self.steps(data.get("background"), ("background",))
        if "scenarios" in data:
            items = data["scenarios"] if isinstance(data["scenarios"], list) else []
            scenarios = tuple(self.scenario(s, ("scenarios", i)) for i, s in enumerate(items) if isinstance(s, dict))
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

    def tags(self, data: dict[str, Any], path: Path_) -> ir.Tags:
        free = []
        listed = data.get("tags")
        for i, tag in enumerate(listed if isinstance(listed, list) else []):
            if not isinstance(tag, str):
                continue  # the schema reported it
            problem = tag_problem(tag)
            if problem is not None:
                self.diags.append(Diagnostic(_nearest(self.positions, (*path, "tags", i)), *problem, "tags"))
            else:
                free.append(tag)
        return ir.Tags(
            id=_text(data.get("id")) or None,
            design=_texts(data.get("design")),
            needs=_texts(data.get("needs")),
            other=tuple(free),
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
        return ir.Scenario(
            name=_text(data.get("title")).strip(),
            tags=self.tags(data, path),
            description=description_text(_text(data.get("description"))),
            steps=self.steps(data.get("steps"), (*path, "steps")),
            location=_nearest(self.positions, (*path, "title")),
        )

    def steps(self, items: Any, path: Path_) -> tuple[ir.StepCall, ...]:
        return tuple(self._calls(items if isinstance(items, list) else [], path, window=None))

    def _calls(self, items: list[Any], path: Path_, window: Window | None) -> Iterator[ir.StepCall]:
        for i, item in enumerate(items):
            item_path = (*path, i)
            if isinstance(item, str):
                key, value = item, None
            elif isinstance(item, dict) and len(item) == 1:
                key, value = next(iter(item.items()))
            else:
                continue  # the schema reported it
            if key == "expect":
                if not isinstance(value, dict) or not isinstance(value.get("all"), list):
                    continue
                if window is not None:
                    self.diags.append(Diagnostic(self.positions[item_path], "`expect` cannot nest", "flatten it", "syntax"))
                    continue
                modes = [mode for mode in ("within", "throughout") if mode in value]
                if len(modes) > 1:
                    self.diags.append(
                        Diagnostic(
                            self.positions[item_path],
                            "`expect` has both `within` and `throughout`",
                            "give it one window: `within` (comes to hold) or `throughout` (holds all along)",
                            "syntax",
                        )
                    )
                    continue
                try:
                    inner = Window(modes[0], Duration.parse(value[modes[0]])) if modes else None
                except ValueError:
                    continue  # the schema reported it
                yield from self._calls(value["all"], (*item_path, "expect", "all"), window=inner)
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
        call, diags = make_call(decl, raw, where, bind_as=bind_as, window=window, field_locations=fields)
        self.diags += diags
        return call


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()
