"""The chosen target → scenarios gated by its capabilities, and the session fixtures.

The target is loaded lazily (only when scenarios were collected), so a pytest run without
scenarios never touches it. Unmet needs become skip marks before any setup; a target that cannot
run ends the run with exit code 2 and one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .bdd_steps import ScenarioRuntime
from .collect import ITEM_SCENARIO
from .nodes import NodeSession
from .runinfo import RUN_INFO
from .target import Target, TargetConfigError, TargetSession, default_target_name, load_target


def _target_options(config: pytest.Config) -> dict[str, str]:
    options = {}
    for item in config.getoption("stepgraph_target_options"):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise TargetConfigError(f"--target-option {item!r}: write KEY=VALUE")
        options[key] = value
    return options


def ensure_target(config: pytest.Config) -> Target:
    info = config.stash[RUN_INFO]
    if info.target is None:
        name = config.getoption("stepgraph_target") or default_target_name()
        try:
            target = load_target(name)
            # A target whose capabilities depend on its options (e.g. the twin's world profile) reads
            # them here, before scenarios are gated on those capabilities.
            configure = getattr(target, "configure", None)
            if configure is not None:
                configure(_target_options(config))
            info.target = target
        except TargetConfigError as exc:
            pytest.exit(f"stepgraph: {exc}", returncode=2)
        info.target_name = name
    return info.target


def gate_items(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [(item, item.stash[ITEM_SCENARIO]) for item in items if ITEM_SCENARIO in item.stash]
    if not ours:
        return
    target = ensure_target(config)
    for item, scenario_info in ours:
        missing = sorted(scenario_info.needs - set(target.capabilities))
        if missing:
            item.add_marker(pytest.mark.skip(reason=f"target {target.name!r} lacks {', '.join(missing)}"))


@pytest.fixture(scope="session")
def stepgraph_session(pytestconfig: pytest.Config) -> Iterator[TargetSession]:
    """The target session, started once for the run."""
    info = pytestconfig.stash[RUN_INFO]
    target = ensure_target(pytestconfig)
    try:
        info.session = target.start(_target_options(pytestconfig))
    except TargetConfigError as exc:
        pytest.exit(f"stepgraph: target {target.name!r}: {exc}", returncode=2)
    try:
        yield info.session
    finally:
        target.stop(info.session)


@pytest.fixture(scope="session")
def stepgraph_cache(stepgraph_session: TargetSession) -> dict[str, Any]:
    return {}


@pytest.fixture
def stepgraph_node() -> str | None:
    """The node a scenario is bound to; None unless the run is per node (`--stepgraph-nodes`)."""
    return None


@pytest.fixture
def stepgraph_scenario(stepgraph_session: TargetSession, stepgraph_cache: dict[str, Any],
                       stepgraph_node: str | None) -> Iterator[ScenarioRuntime]:
    """Bindings and finalizers of one scenario; the finalizers run at its teardown, always."""
    __tracebackhide__ = True
    session, cache = stepgraph_session, stepgraph_cache
    if stepgraph_node is not None:  # API clients and handles are per node: they carry the node's name
        session = NodeSession(stepgraph_session, stepgraph_node)
        cache = stepgraph_cache.setdefault(("node", stepgraph_node), {})
    runtime = ScenarioRuntime(session, cache)
    try:
        yield runtime
    finally:
        runtime.finalizers.run()
