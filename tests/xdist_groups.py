"""One pytest-xdist group per set of tests sharing a result, so no shared result is computed twice.

Under pytest-xdist each worker is a process of its own, so a result computed once per process (a
module- or session-scoped fixture, a `functools.cache` function such as the catalog's world runs)
would be computed again by every worker that runs one of its tests. The tests sharing such a result
(transitively) are therefore one `xdist_group`, which `--dist loadgroup` hands to one worker; every
other test is distributed one by one.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def group_shared_results(config: pytest.Config, items: list[pytest.Item], tests: Path) -> None:
    """Mark every item that shares a result defined under `tests` with the group of that result."""
    # Tests connected through any shared result form one group (union-find over the results),
    # named after its first result.
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    shared = [(item, sorted(set(_shared_results(item, tests)))) for item in items]
    for _, names in shared:
        for other in names[1:]:
            a, b = root(names[0]), root(other)
            parent[max(a, b)] = min(a, b)
    reporting = getattr(config.option, "loadgroup", False)  # an xdist worker of a --dist loadgroup run
    for item, names in shared:
        if names:
            group = root(names[0])
            item.add_marker(pytest.mark.xdist_group(group))
            if reporting:
                _report_group(item, group)


def _report_group(item: pytest.Item, group: str) -> None:
    """Make the id this worker reports to xdist's controller `<id>@<group>`: that suffix is how the
    controller learns an item's group. xdist writes it into `item._nodeid`, which pytest 9.2 no
    longer reads (an item's id is a NodeId in `item._id` there), so on 9.2 the mark alone groups
    nothing. Older pytest has no `_id`; xdist's own suffix works there."""
    node_id = getattr(item, "_id", None)
    if node_id is not None and not item.nodeid.endswith(f"@{group}"):
        item._id = type(node_id).parse(f"{item.nodeid}@{group}")


def _shared_results(item: pytest.Item, tests: Path) -> Iterable[str]:
    """What `item` shares with other tests of its worker: fixtures wider than a test, and cached
    functions its module holds, defined under `tests`."""
    info = getattr(item, "_fixtureinfo", None)
    for name, defs in (info.name2fixturedefs.items() if info else ()):
        fixture = defs[-1]
        if fixture.scope != "function" and _defined_under(fixture.func, tests):
            yield f"{fixture.baseid or '.'}::{name}"
    module = getattr(item, "module", None)
    if module is not None:
        yield from _cached_functions(module, tests)


@functools.cache
def _cached_functions(module: ModuleType, tests: Path) -> tuple[str, ...]:
    """The cached functions `module` holds, defined under `tests` (once per module, not per item)."""
    return tuple(f"{value.__module__}.{value.__qualname__}" for value in vars(module).values()
                 if callable(value) and hasattr(value, "cache_info") and _defined_under(getattr(value, "__wrapped__", None), tests))


def _defined_under(func: Any, tests: Path) -> bool:
    code = getattr(func, "__code__", None)
    return code is not None and _file_under(code.co_filename, tests)


@functools.cache
def _file_under(filename: str, tests: Path) -> bool:
    return Path(filename).resolve().is_relative_to(tests)
