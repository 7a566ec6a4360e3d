"""Bad input → one readable error: `file:line:col: what is wrong — what to do`.

Every reader in this package raises `InputError` instead of letting a parser's traceback escape;
the CLI prints the errors and exits 2.
"""

from __future__ import annotations

from dataclasses import dataclass
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
