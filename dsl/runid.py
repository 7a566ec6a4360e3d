"""This run's id: one per pytest run, shared by the pytest-xdist workers of one run, never
inherited by a run started from inside another.

Every object a run creates is labelled with it, so a later run can tell what a killed run left
(another id) from its own retried creates (its id). pytest-xdist puts its run's id into the
environment of its workers, and every process they start inherits it; taken from there, a
pytest run started by a test in a worker would share the worker's id and take a killed run's
objects for its own. So the id comes from pytest's own configuration of *this* run: the
controller's id in a worker, a fresh one otherwise.
"""

from __future__ import annotations

import uuid
from typing import Any

_current: str | None = None


def begin(config: Any) -> str:
    """Start a run's id for a pytest run being configured (`config.workerinput` in an xdist worker)."""
    global _current
    worker_input = getattr(config, "workerinput", None) or {}
    _current = str(worker_input.get("testrunuid") or "")[:12] or uuid.uuid4().hex[:12]
    return _current


def current() -> str:
    """The id of the run in progress (outside pytest: one for this process)."""
    global _current
    if _current is None:
        _current = uuid.uuid4().hex[:12]
    return _current
