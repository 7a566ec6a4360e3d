"""What every test folder shares: the grouping of tests for pytest-xdist, and `pytester`.

Under pytest-xdist (`make test`: one worker more than cores, `--dist loadgroup`) the tests sharing a result computed
once per process are one group, run by one worker (`xdist_groups.py`).

`pytester` is the standard one, with in-process runs made as independent of the test process as
a subprocess would be. A pytest run in the test's own process saves a second interpreter's start
(most of a second of CPU each), but it shares the process-wide state stepgraph keeps: the step
registry (each run imports its step library again), this run's id, the SIGINT/SIGTERM handlers
its plugin installs and removes, the temp directory (read once from TMPDIR and cached) and the
environment. Each in-process run gets that state as a fresh process would see it, and the test
process gets its own back afterwards. Installed libraries stay imported from one run to the next
(as they do for the scenario catalog's in-process runs); our modules a run imports are forgotten
after it, so the next run imports them afresh. Those the test process had imported before the
test (the plugin pytest loaded, whatever earlier tests imported) stay, and so do their in-memory
caches (load_gherkin's parsed documents, for one): a test of what a new process finds in memory
or on disk, such as a second run reading only what the first kept, needs processes of its own.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from _pytest.pytester import SysModulesSnapshot
from frozen_heap import freeze_what_lives
from xdist_groups import group_shared_results

from stepgraph.dsl import REGISTRY, interrupts, phrases, runid

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_TESTS = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    group_shared_results(config, items, _TESTS)


@contextmanager
def run_state_of_its_own() -> Iterator[None]:
    """The process-wide state a pytest run changes, put back as it was once the run is over.

    The test process's heap is frozen first (frozen_heap), so what an interrupted run freezes on
    its way out only joins what was frozen already: nothing to undo there."""
    freeze_what_lives()
    registry = REGISTRY.snapshot()
    placeholder_types = dict(phrases.PLACEHOLDER_TYPES)
    run_id = runid._current
    handlers = {signum: signal.getsignal(signum) for signum in _SIGNALS}
    installed, count = dict(interrupts._previous), interrupts._count
    environ = dict(os.environ)
    temp_root = tempfile.tempdir
    interrupts._previous.clear()  # so the run installs its handlers, as its own process would
    tempfile.tempdir = None  # so the run reads TMPDIR, as its own process would
    try:
        yield
    finally:
        REGISTRY.restore(registry)
        phrases.PLACEHOLDER_TYPES.clear()
        phrases.PLACEHOLDER_TYPES.update(placeholder_types)
        runid._current = run_id
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        interrupts._previous.clear()
        interrupts._previous.update(installed)
        interrupts._count = count
        os.environ.clear()
        os.environ.update(environ)
        tempfile.tempdir = temp_root


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """pytester whose in-process runs (`runpytest_inprocess`, `inline_run`) each start from the
    state a fresh process has and leave the test process's state as it was."""
    inline_run = pytester.inline_run

    def isolated_inline_run(*args: Any, **kwargs: Any) -> Any:
        # A run's Ctrl-C is its own, as a subprocess's would be: its exit code says so. (Re-raising
        # it also breaks on a run that pytest.exit()s with code 2 before pytester's recorder starts.)
        kwargs.setdefault("no_reraise_ctrlc", True)
        with run_state_of_its_own():
            return inline_run(*args, **kwargs)

    pytester.inline_run = isolated_inline_run  # type: ignore[method-assign]
    # pytester forgets every module imported during a test and during each in-process run. Library
    # modules must stay: an extension module cannot be imported twice in one process (a second
    # `cryptography`, which the twin's CA uses, fails its own type checks). Only our modules and
    # the run's own are forgotten, so a run imports them again, registering their steps again.
    pytester._sys_modules_snapshot = SysModulesSnapshot(preserve=_is_library)
    pytester._Pytester__take_sys_modules_snapshot = lambda: SysModulesSnapshot(preserve=_is_library)  # type: ignore[attr-defined]
    return pytester


_LIBRARY_ROOTS = tuple(str(Path(root).resolve()) + os.sep for root in {sys.prefix, sys.base_prefix})


def _is_library(name: str) -> bool:
    """An installed or standard-library module (or a built-in one), not ours or a test project's."""
    if name == "stepgraph" or name.startswith("stepgraph."):
        return False
    file = getattr(sys.modules.get(name), "__file__", None)
    return file is None or _installed(file)


@functools.cache
def _installed(file: str) -> bool:
    """Whether `file` lies under the interpreter's prefixes, its links resolved. Asked of every
    module in sys.modules at each restore of a snapshot (two or more per pytester test, a worker
    holding some two thousand modules), and a file's place does not change: resolved once each."""
    return str(Path(file).resolve()).startswith(_LIBRARY_ROOTS)
