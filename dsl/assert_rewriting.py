"""stepgraph's own modules are library code: pytest never rewrites their asserts, however installed.

pytest rewrites the asserts of the packages that provide its plugins, and which ones it finds
depends on how the distribution was installed: from the wheel it finds none of ours (our packages
live under a `stepgraph/` folder without an `__init__.py`, which its look-up skips); from an
editable install it marks the packages of our plugin entry points (stepgraph.dsl,
stepgraph.targets). Our asserts only narrow types, so rewriting them changes no message; it does
change the import path — the rewriting hook loads each module's cached code in many small reads
(12 ms of collecting the catalog) — and makes a checkout behave unlike what users install.
So the marks on our packages are taken back as the first of them is imported, and every install
imports them as the wheel does. The hook's set of marked names is not public API: if it is
missing, pytest rewrites as before and only the time differs (tests/dsl/test_not_rewritten.py).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import sys


def take_back_pytest_marks() -> None:
    """Unmark `stepgraph` and its packages in pytest's assertion-rewriting hook, if one is installed."""
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if type(finder).__name__ == "AssertionRewritingHook" and isinstance(marked, set):
            marked -= {name for name in marked if _ours(name)}
            cache = getattr(finder, "_marked_for_rewrite_cache", None)
            if isinstance(cache, dict):
                for name in [name for name in cache if _ours(name)]:
                    del cache[name]


def _ours(module: str) -> bool:
    return module == "stepgraph" or module.startswith("stepgraph.")
