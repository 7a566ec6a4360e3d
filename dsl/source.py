"""Scenario files on disk → text, refusing what would hurt: missing paths, huge files, non-UTF-8."""

from __future__ import annotations

from pathlib import Path

from .diagnostics import Diagnostic, Location

MAX_BYTES = 1_000_000


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
        return data.decode("utf-8"), []
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
