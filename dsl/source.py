"""Scenario files on disk → text, refusing what would hurt: missing paths, huge files, non-UTF-8,
line endings and characters that make the two parsers and our positions disagree."""

from __future__ import annotations

import re
from pathlib import Path

from .diagnostics import Diagnostic, Location

MAX_BYTES = 1_000_000

# The Gherkin parser ends lines only at LF, while YAML and Python's str.splitlines() also end them at
# a lone CR, NEL, VT, FF and the Unicode separators; a file holding one would be read as different
# lines by each, so positions would point at the wrong line and a step could hide inside another
# line. Other control characters are invisible in an editor and never part of a scenario.
_LONE_CR = re.compile(r"\r(?!\n)")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")


def read_text(path: Path, display: str) -> tuple[str | None, list[Diagnostic]]:
    """The file's text, or diagnostics saying why it cannot be read."""
    where = Location(display)
    if not path.exists():
        return None, [Diagnostic(where, "no such file or directory", "check the path", "syntax")]
    if not path.is_file():
        return None, [Diagnostic(where, "not a regular file", "pass a .feature or .yaml file, or a folder", "syntax")]
    size = path.stat().st_size
    if size > MAX_BYTES:
        return None, [
            Diagnostic(
                where,
                f"file is {size / 1e6:.1f} MB, over the {MAX_BYTES / 1e6:g} MB limit for a scenario file",
                "split it into several files",
                "syntax",
            )
        ]
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        return None, [
            Diagnostic(
                Location(display, line, column),
                f"byte 0x{data[exc.start]:02x} is not valid UTF-8",
                "save the file as UTF-8",
                "syntax",
            )
        ]
    return text, characters_problems(text, display)


def characters_problems(text: str, display: str) -> list[Diagnostic]:
    """A lone CR line ending, or the first control character, at its line and column."""
    lone_cr = _LONE_CR.search(text)
    if lone_cr is not None:
        return [
            Diagnostic(
                _position(text, lone_cr.start(), display),
                "this line ends with a lone CR (carriage return), which the Gherkin parser does not read as a line end",
                "save the file with LF (or CRLF) line endings",
                "syntax",
            )
        ]
    control = _CONTROL.search(text)
    if control is not None:
        return [
            Diagnostic(
                _position(text, control.start(), display),
                f"control character U+{ord(control.group()):04X} in the text",
                "remove it (write it as an escape inside a quoted YAML string if it is meant)",
                "syntax",
            )
        ]
    return []


def _position(text: str, index: int, display: str) -> Location:
    before = text[:index]
    return Location(display, before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1)
