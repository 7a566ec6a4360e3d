"""Files as the reports name them: from the rootdir (or a declared base), never by where this machine keeps them.

pytest names tests from its rootdir (`scenarios/b.feature::test_x`) whatever folder the run
starts in; the reports name files the same way, so a report attached to a CI run or opened on
another machine points at the same files, and globs over scenario files (expected outcomes)
select the same scenarios from any working folder. A file outside the base has no name that
holds elsewhere: it is kept as given.
"""

from __future__ import annotations

import os
from pathlib import Path


def from_base(path: str | Path, base: Path, start: Path | None = None) -> str:
    """`path` (a relative one is taken from `start`, by default the working folder) named from `base`, with `/`."""
    absolute = Path(os.path.normpath(Path(start or Path.cwd(), path)))
    root = Path(os.path.normpath(base.absolute()))
    return absolute.relative_to(root).as_posix() if absolute.is_relative_to(root) else str(path)


def portable_value(text: str, base: Path) -> str:
    """A free-form value (a command-line argument, `--opt=VALUE`, `key=VALUE`, a target's fact):
    an absolute path inside `base` named from it; any other value as given (a relative one is
    what was typed)."""
    name, sep, value = text.partition("=")
    if not sep or "/" in name:  # no `=`, or one inside a path
        name, sep, value = "", "", text
    if os.path.isabs(value):
        return name + sep + from_base(value, base)
    return text
