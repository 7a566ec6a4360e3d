"""The entry points of the installed distributions, read once per search path.

Reading them means reading every installed distribution's metadata (5-20 ms with some 80
installed), and a run asks for three groups (the step libraries, then the targets twice: the
default and the chosen one), the command line for two. The metadata is read again whenever
`sys.path` differs from the last reading (a run that adds its rootdir or `pythonpath`, say)."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint, EntryPoints, entry_points

_read: dict[tuple[str, ...], EntryPoints] = {}


def in_group(group: str) -> tuple[EntryPoint, ...]:
    """The entry points of `group`, in the order `importlib.metadata.entry_points(group=...)` gives."""
    path = tuple(sys.path)
    everything = _read.get(path)
    if everything is None:
        _read.clear()
        everything = _read[path] = _every_entry_point()
    return tuple(everything.select(group=group))


def _every_entry_point() -> EntryPoints:
    if sys.version_info >= (3, 12):
        return entry_points()
    # Python 3.11 gives them grouped: a dict of group → its entry points, each group in found
    # order, whose own `values()` warns that it is deprecated (the plain dict's does not)
    return EntryPoints(ep for group in dict.values(entry_points()) for ep in group)
