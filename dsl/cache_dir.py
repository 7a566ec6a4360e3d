"""Where the language keeps what it derives once from a file and reuses across runs and processes.

`stepgraph/` under `$STEPGRAPH_CACHE_DIR`, else `$XDG_CACHE_HOME`, else `~/.cache` (the folder
the twin keeps its compiled validators in; `dsl` imports nothing of the twin, so the lookup is
its own). Everything kept here is named by a hash of all it was derived from and written whole or
not at all (a temporary file renamed into place), so parallel runs share it without a lock; a
folder that cannot be written only means nothing is kept.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

CACHE_ENV = "STEPGRAPH_CACHE_DIR"


def cache_root() -> Path:
    base = os.environ.get(CACHE_ENV) or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stepgraph"


def read_kept_json(path: Path) -> Any:
    """What `path` keeps, read as JSON; None when nothing is kept there, or what is there is not
    JSON (a file someone else wrote: the caller derives its value again). Callers check the shape."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def keep_json(path: Path, value: Any) -> None:
    keep(path, json.dumps(value).encode())


def installed_releases(package: str, prefixes: tuple[str, ...]) -> list[str]:
    """The `.dist-info` folders beside `package` (found without importing it) whose names begin
    with one of `prefixes` (lower case), sorted: what names the installed release of a parser."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return []
    folder = Path(spec.origin).parents[package.count(".") + 1]  # the folder the top-level package is in
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(n for n in names if n.lower().startswith(prefixes) and n.endswith(".dist-info"))


@functools.cache
def parser_release(package: str, prefixes: tuple[str, ...]) -> bytes | None:
    """A digest of the interpreter and of the parser's installed release (`installed_releases`):
    what a value the parser derives from a text depends on besides the text. None when no release
    is found; then nothing the parser derives is kept, as an upgrade could not be told apart."""
    releases = installed_releases(package, prefixes)
    if not releases:
        return None
    return hashlib.sha256(sys.version.encode() + b"\0" + "\0".join(releases).encode()).digest()


def keep(path: Path, data: bytes) -> None:
    """`path` holds `data` whole, or is left as it was; an unwritable cache keeps nothing."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- values derived by code: kept with the files of the code that derived them ----------------------
#
# Some values come from running code, not from one file: what a module declares when it is imported,
# what a validation accepted. Such a value is kept with the stamp (size, modification time in ns) of
# every module file loaded when it was derived, and is read back only while every one of those files
# still has its stamp: an edit to any module the process had loaded — the one that derived it, what
# that one imported, the validating code — means the value is derived again. That is the check
# Python itself makes of a source file against its compiled .pyc, at a finer clock.


def loaded_sources() -> list[list[Any]]:
    """[path, size, mtime_ns] of the file of every module loaded now, in sys.modules order."""
    stamps = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            continue
        try:
            stat = os.stat(path)
        except OSError:
            continue
        stamps.append([path, stat.st_size, stat.st_mtime_ns])
    return stamps


def sources_unchanged(stamps: Any) -> bool:
    """Whether every [path, size, mtime_ns] of `stamps` (as `loaded_sources` gave them) still holds."""
    if not isinstance(stamps, list) or not stamps:
        return False
    for stamp in stamps:
        if not (isinstance(stamp, list) and len(stamp) == 3 and isinstance(stamp[0], str)):
            return False
        try:
            stat = os.stat(stamp[0])
        except OSError:
            return False
        if [stat.st_size, stat.st_mtime_ns] != stamp[1:]:
            return False
    return True


def read_kept_derived(path: Path) -> Any:
    """The value `keep_derived` kept at `path`, if every module file it recorded is unchanged; else None."""
    kept = read_kept_json(path)
    if not isinstance(kept, dict) or "value" not in kept or not sources_unchanged(kept.get("sources")):
        return None
    return kept["value"]


def keep_derived(path: Path, value: Any) -> None:
    """Keep `value` at `path` with the stamps of the module files loaded now (see above)."""
    keep_json(path, {"value": value, "sources": loaded_sources()})
