"""YAML text → plain data plus the line and column of every key, item and value (ruamel.yaml).

Safe by construction: ruamel's round-trip loader builds only maps, lists and scalars; duplicate
keys are errors; merge keys and tags are refused; alias expansion and nesting are bounded.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError

from .diagnostics import Diagnostic, Location

MAX_NODES = 100_000
MAX_DEPTH = 64
Path_ = tuple[Any, ...]


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
        node = yaml.compose(text)
        unsupported = _unsupported(node, display)
        if unsupported is not None:
            return None, {}, [unsupported]
        doc = yaml.constructor.construct_document(node) if node is not None else None
    except ReaderError as exc:
        where = _offset_location(text, exc.position, display)
        what = f"character U+{exc.character:04X}" if isinstance(exc.character, int) else "a character"
        return None, {}, [Diagnostic(where, f"YAML syntax: {what} is not allowed in YAML", "remove it", "syntax")]
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


_MERGE_TAG = "tag:yaml.org,2002:merge"
_INT_TAG = "tag:yaml.org,2002:int"
#: Python refuses to turn longer digit strings into an int (its int-string conversion limit)
MAX_INT_DIGITS = 4300


def _unsupported(root: Node | None, display: str) -> Diagnostic | None:
    """The first merge key (`<<:`) or explicit tag (`!x`, `!!python/tuple`) in the composed document.
    Merged keys have no position of their own and hide where a step's parameters come from; a tag
    would either build a Python object or be dropped without a word. Neither has a meaning here."""
    seen: set[int] = set()
    todo = [root] if root is not None else []
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        where = Location(display, node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, ScalarNode) and node.tag == _MERGE_TAG:
            return Diagnostic(where, "YAML merge keys (`<<:`) are not supported", "write the keys out in this mapping", "syntax")
        if getattr(node.ctag, "handle", None) is not None:
            return Diagnostic(
                where,
                f"YAML tag `{node.ctag.handle}{node.ctag.suffix}` is not supported",
                "remove the tag; to make a value text, quote it",
                "syntax",
            )
        if isinstance(node, ScalarNode) and node.tag == _INT_TAG and len(node.value) > MAX_INT_DIGITS:
            return Diagnostic(where, f"a number with {len(node.value)} digits", "no parameter takes a number that long; check it", "syntax")
        if isinstance(node, MappingNode):
            todo += [part for pair in reversed(node.value) for part in reversed(pair)]
        elif isinstance(node, SequenceNode):
            todo += reversed(node.value)
    return None


def _offset_location(text: str, offset: int, display: str) -> Location:
    before = text[:offset]
    return Location(display, before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1)


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
