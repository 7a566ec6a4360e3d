"""Freeze what the test process holds before it runs pytest in-process.

A test worker's heap (pytest with every test collected, the twin, the kubernetes client and the
step libraries, imported once) is several hundred thousand objects that live until the worker
ends. Without this, every collection of garbage in an in-process run walks all of them: the one
a stepgraph run makes once its scenarios are collected, pytest's at the run's end and the automatic
ones in between (about a quarter of a second each on a loaded machine, several per run). Frozen,
they walk only what was made since, as they would in a run of its own process, and stepgraph's
plugin leaves the freezing of a run inside a frozen one to the outer run. What is garbage already
is collected first, so its finalizers still report here; what becomes garbage later is collected
by the next freeze's collection.
"""

from __future__ import annotations

import gc


def freeze_what_lives() -> None:
    gc.collect()  # walks only what is not frozen yet: what was made since the last freeze
    gc.freeze()
