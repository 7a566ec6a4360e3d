"""The heap at exit: frozen before the interpreter's last collections of garbage.

Those collections walk every object a process leaves (the twin, the cluster client's models, a
worker's thousand tests): some 0.25 CPU-s of a run on the twin, and a tenth of a lint, only to run
finalizers that Python does not promise at exit. pytest has made its own last collections by then
and reported what finalizers raised. A process that goes on after its run is not affected until
it exits.
"""

from __future__ import annotations

import atexit
import gc

_registered = False


def freeze_heap_at_exit() -> None:
    """Freeze the heap at exit, once per process. The exit handlers registered before the first
    call still run, after it: the `stepgraph` command calls this first of all, so it runs last."""
    global _registered
    if not _registered:
        atexit.register(gc.freeze)
        _registered = True
