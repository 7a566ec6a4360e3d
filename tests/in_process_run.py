"""`stepgraph …` run in the test's own process, as a process of its own would run it.

The command sets what the targets read in the environment (the node selector, the run's folders),
as it would in a process of its own; here that process is the test's, so the environment is put
back once the command returns. The test process's heap is frozen first (see frozen_heap).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from frozen_heap import freeze_what_lives

from stepgraph.dsl.cli import main


def stepgraph_here(argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> int:
    """The exit code of `stepgraph ARGV` run here, with `env` added to the environment for it."""
    environ = dict(os.environ)
    os.environ.update(env or {})
    freeze_what_lives()
    try:
        return main(list(argv))
    finally:
        os.environ.clear()
        os.environ.update(environ)
