"""The entry points of the installed distributions, read once per search path.

Reading them means reading every installed distribution's metadata (8-12 ms with some 80
installed), and a run asks for three groups (the step libraries, then the targets twice: the
default and the chosen one), the command line for two. The metadata is read again whenever
`sys.path` differs from the last reading (a run that adds its rootdir or `pythonpath`, say).

Across processes, what a search path's distributions declare is kept on disk, with a stamp
(modification time in ns, and size for a file) of each folder and file on the path, of each
distribution's metadata folder found in them and of its `entry_points.txt`: a distribution
installed, removed or upgraded changes the folder it is in, and one whose entry points were
rewritten in place changes that file, so while every stamp holds the distributions are the ones
read. With a finder on `sys.meta_path` that finds distributions of its own, nothing is kept."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from importlib.machinery import PathFinder
from importlib.metadata import EntryPoint, EntryPoints, entry_points
from pathlib import Path
from typing import Any

from .cache_dir import cache_root, keep_json, read_kept_json

_read: dict[tuple[str, ...], EntryPoints] = {}


def in_group(group: str) -> tuple[EntryPoint, ...]:
    """The entry points of `group`, in the order `importlib.metadata.entry_points(group=...)` gives."""
    path = tuple(sys.path)
    everything = _read.get(path)
    if everything is None:
        _read.clear()
        everything = _read[path] = _kept_or_read(path)
    return tuple(everything.select(group=group))


def _kept_or_read(path: tuple[str, ...]) -> EntryPoints:
    own_finders = any(getattr(f, "find_distributions", None) is not None for f in sys.meta_path if f is not PathFinder)
    kept_file = None if own_finders else _kept_file(path)
    kept = read_kept_json(kept_file) if kept_file is not None else None
    if isinstance(kept, dict) and _still(kept.get("stamps")):
        try:
            return EntryPoints(EntryPoint(name, value, group) for group, name, value in kept["entry_points"])
        except (KeyError, TypeError, ValueError):  # not what is written below: read them again
            pass
    stamps = _stamps(path)  # before reading: a distribution changed meanwhile is read again next time
    everything = _every_entry_point()
    if kept_file is not None:
        keep_json(kept_file, {"stamps": stamps, "entry_points": [[ep.group, ep.name, ep.value] for ep in everything]})
    return everything


def _every_entry_point() -> EntryPoints:
    if sys.version_info >= (3, 12):
        return entry_points()
    # Python 3.11 gives them grouped: a dict of group → its entry points, each group in found
    # order, whose own `values()` warns that it is deprecated (the plain dict's does not)
    return EntryPoints(ep for group in dict.values(entry_points()) for ep in group)


def _kept_file(path: tuple[str, ...]) -> Path | None:
    """Where the entry points of `path` are kept; None when the working folder (what "" on the
    path names) is gone: they are read as ever."""
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    key = json.dumps([sys.version, cwd, list(path)]).encode()
    return cache_root() / "entry-points" / f"{hashlib.sha256(key).hexdigest()[:32]}.json"


def _stamp(path: str) -> list[int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [found.st_mtime_ns, 0 if stat.S_ISDIR(found.st_mode) else found.st_size]


def _stamps(path: tuple[str, ...]) -> list[list[Any]]:
    """[file, stamp] of each entry of the search path, of each metadata folder of a distribution
    in it (as importlib.metadata finds them: `*.dist-info`, `*.egg-info`, an egg's `EGG-INFO`) and
    of that folder's entry_points.txt; a missing one is stamped None."""
    stamps: list[list[Any]] = []
    for entry in path:
        folder = entry or "."
        stamps.append([folder, _stamp(folder)])
        try:
            children = os.listdir(folder)
        except OSError:  # not a folder: a zip file's stamp stands for what it holds
            continue
        egg = folder.lower().endswith(".egg")
        for child in sorted(children):
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")) or (egg and low == "egg-info"):
                meta = os.path.join(folder, child)
                stamps.append([meta, _stamp(meta)])
                stamps.append([os.path.join(meta, "entry_points.txt"), _stamp(os.path.join(meta, "entry_points.txt"))])
    return stamps


def _still(stamps: Any) -> bool:
    """Whether each [file, stamp] of `stamps` still holds (the search path's folders unchanged,
    so no distribution came or went, and each one's metadata unchanged)."""
    if not isinstance(stamps, list) or not stamps:
        return False
    for pair in stamps:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            return False
        if _stamp(pair[0]) != pair[1]:
            return False
    return True
