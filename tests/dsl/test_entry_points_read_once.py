"""The installed distributions' entry points are read once per search path: a run asks for the
step libraries and the targets (twice), and each reading goes through every distribution's
metadata."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from stepgraph.dsl import entry_points


def test_groups_are_read_from_one_reading_until_the_search_path_changes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("STEPGRAPH_CACHE_DIR", str(tmp_path))  # nothing kept by another process: each path is read
    readings = []

    def counted() -> importlib.metadata.EntryPoints:
        readings.append(tuple(sys.path))
        return importlib.metadata.entry_points()

    monkeypatch.setattr(entry_points, "entry_points", counted)
    monkeypatch.setattr(entry_points, "_read", {})
    steps = entry_points.in_group("stepgraph.steps")
    targets = entry_points.in_group("stepgraph.targets")
    assert steps == tuple(importlib.metadata.entry_points(group="stepgraph.steps"))
    assert targets == tuple(importlib.metadata.entry_points(group="stepgraph.targets"))
    assert len(readings) == 1
    monkeypatch.setattr(sys, "path", [*sys.path, "/nowhere"])
    assert entry_points.in_group("stepgraph.steps") == steps
    assert len(readings) == 2
