"""Bad input → one readable error: `file:line:col: what is wrong — what to do`.

Every reader in this package raises `InputError` instead of letting a parser's traceback escape;
the CLI prints the errors and exits 2.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from stepgraph.dsl.diagnostics import Diagnostic, Location


@dataclass(frozen=True)
class InputError(Exception):
    """A problem in a file the user gave us, located as precisely as we can."""

    path: str
    line: int
    problem: str
    fix: str
    column: int = 1

    def __str__(self) -> str:  # the same one-line form as the compiler's diagnostics
        return str(Diagnostic(Location(self.path, self.line, self.column), self.problem, self.fix))


def read_text(path: str | Path, what: str) -> str:
    """Read a UTF-8 text file, turning every way that can fail into an InputError."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(str(path), 1, f"cannot read {what}: {exc.strerror or exc}", "check the path and permissions") from None
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise InputError(str(path), line, f"{what} is binary (NUL byte)", "pass a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(str(path), line, f"{what} is not UTF-8 text", "save it as UTF-8") from None


#: Deeper than any file we write (results nest about six levels); the json module would hit
#: Python's recursion limit on a file nested 100,000 deep.
MAX_JSON_DEPTH = 200


def parse_json(text: str, path: str | Path, what: str, fix: str, *, says_truncated: bool = True) -> Any:
    """JSON text → data; nesting past MAX_JSON_DEPTH, an integer past Python's int-string limit
    and invalid JSON are InputErrors at their position (a file cut short says so, unless
    `says_truncated` is False)."""
    line, column = _too_deep(text)
    if line:
        raise InputError(str(path), line, f"{what} nests deeper than {MAX_JSON_DEPTH} levels", fix, column)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        truncated = says_truncated and exc.pos >= len(text.rstrip())
        problem = f"{what} is truncated" if truncated else f"{what} is not valid JSON ({exc.msg})"
        raise InputError(str(path), exc.lineno, problem, fix, exc.colno) from None
    except ValueError:  # only the int-string conversion limit raises a plain ValueError here
        digits = re.search(r"\d{4301,}", text)
        before = text[: digits.start()] if digits else ""
        raise InputError(str(path), before.count("\n") + 1, f"{what} holds a number of more than 4300 digits", fix,
                         len(before) - (before.rfind("\n") + 1) + 1) from None


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # an escape may be of any character
_NOT_BRACKET = re.compile(r"[^][{}]+")
_NESTING = {"[": 1, "{": 1, "]": -1, "}": -1}


def _depth_bound(text: str) -> int:
    """At least as deep as brackets outside strings nest in `text`, found in C loops: the
    strings removed, the brackets left are summed. It matches the scan below up to any string left
    open, whose brackets the scan no longer counts and this still does (so it can only say deeper)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_NESTING.__getitem__, brackets), initial=0))


def _too_deep(text: str) -> tuple[int, int]:
    """(line, column) where brackets outside strings first nest past MAX_JSON_DEPTH, else (0, 0).
    The exact scan runs only when the bound says the text may be that deep (57 → 8 ms on a
    267 KB results file)."""
    if _depth_bound(text) <= MAX_JSON_DEPTH:
        return 0, 0
    depth, in_string, escaped, line, start = 0, False, False, 1, 0
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return line, index - start + 1
        elif char in "]}":
            depth -= 1
        if char == "\n":
            line, start = line + 1, index + 1
    return 0, 0


def node_position(node: Any, json_path: list[str | int]) -> tuple[int, int]:
    """1-based (line, column) of a JSON path in a ruamel round-trip document (the deepest part found)."""
    line = column = 0
    for part in json_path:
        try:
            line, column = node.lc.key(part) if isinstance(part, str) else node.lc.item(part)
            node = node[part]
        except (AttributeError, KeyError, IndexError, TypeError):
            break
    return line + 1, column + 1
