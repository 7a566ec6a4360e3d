"""A design doc (Markdown) → the ids it defines, for static check 9.

A small scan: section numbers and requirement ids at the start of headings (`### 8.5.7 Conflicts`,
`## B5 — ...`) and in the first cell of table rows (`| B5 | ... |`). The reports package has the
full design-doc parser; anything that returns a set of ids can be plugged into the compiler.
"""

from __future__ import annotations

import re
from pathlib import Path

_ID = r"(?:§?\d+(?:\.\d+)+|[A-Z]{1,3}\d+(?:\.\d+)*)"
_HEADING = re.compile(rf"^#{{1,6}}\s+(?:§\s*)?({_ID})\b")
_ROW = re.compile(rf"^\|\s*\**({_ID})\**\s*\|")


def design_ids_from_markdown(text: str) -> set[str]:
    found = set()
    for line in text.splitlines():
        m = _HEADING.match(line) or _ROW.match(line.strip())
        if m:
            found.add(m.group(1).lstrip("§").rstrip("."))
    return found


def design_ids_from_file(path: Path) -> set[str]:
    return design_ids_from_markdown(path.read_text(encoding="utf-8"))
