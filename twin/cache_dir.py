"""Where the twin keeps what it builds once and reuses across runs and processes.

`stepgraph/` under `$STEPGRAPH_CACHE_DIR`, else `$XDG_CACHE_HOME`, else `~/.cache`. Everything
kept here is named by a hash of what it was built from and written whole or not at all (a
temporary file renamed into place), so parallel twins share it without a lock.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

CACHE_ENV = "STEPGRAPH_CACHE_DIR"


def cache_root() -> Path:
    base = os.environ.get(CACHE_ENV) or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stepgraph"


def write_atomically(path: Path, data: bytes) -> None:
    """`path` holds `data` whole, or is left as it was: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
