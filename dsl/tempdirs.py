"""Temporary folders named after the process that made them, so a later run can remove what a
killed one left.

A run removes its own folders at exit; a run killed with SIGKILL cannot. Every folder stepgraph
makes in the temp directory is called `stepgraph-<what>-<pid>-<random>` (the twin names its work
folder the same way), and at start a run removes those whose process no longer exists.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

_OURS = re.compile(r"^stepgraph-[a-z]+-(\d+)-")


def make(what: str) -> Path:
    """A new temporary folder for `what` (features, …), marked with this process's id."""
    return Path(tempfile.mkdtemp(prefix=f"stepgraph-{what}-{os.getpid()}-"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def sweep_stale(folder: str | None = None) -> list[Path]:
    """Remove the stepgraph temp folders whose process is gone; return what was removed."""
    base = Path(folder or tempfile.gettempdir())
    removed = []
    try:
        entries = list(base.iterdir())
    except OSError:
        return []
    for entry in entries:
        m = _OURS.match(entry.name)
        if m is None or not entry.is_dir() or entry.is_symlink() or int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
    return removed
