"""The chosen target → scenarios gated by its capabilities, and the session fixtures.

The target is loaded lazily (only when scenarios were collected), so a pytest run without
scenarios never touches it, and started lazily (by the first scenario that needs one of its
capabilities), so a run of scenarios that need none never starts it. Unmet needs become skip
marks before any setup; a target that cannot run ends the run with exit code 2 and one line.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator

import pytest

from .bdd_steps import ScenarioRuntime
from .finalizers import CleanupInterrupted, CleanupTimedOut, FinalizerError, FinalizerStack
from .nodes import NodeSession, bound_node
from .runinfo import ITEM_SCENARIO, RUN_INFO, RunInfo
from .target import Target, TargetConfigError, TargetSession, check_options, default_target_name, load_target

#: The run's sessions, once its first scenario made them.
RUN_SESSIONS = pytest.StashKey["RunSessions"]()


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
            check_options(target, _target_options(config))
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


class RunSessions:
    """The run's target sessions, each started on first use: the target's own for the scenarios
    that need one of its capabilities, and its clock session (if it offers one) for those that
    need none — a run of such scenarios alone never starts the target (a twin, a cluster)."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._info = config.stash[RUN_INFO]
        self._target = ensure_target(config)

    def of(self, needs: frozenset[str] | None) -> TargetSession:
        """The session a scenario needing `needs` runs on (None: not known, the target's own)."""
        info = self._info
        if not needs and needs is not None and hasattr(self._target, "clock_session"):
            return info.clock_session if info.clock_session is not None else self._start(clock=True)
        return info.session if info.session is not None else self._start(clock=False)

    def _start(self, *, clock: bool) -> TargetSession:
        info, target = self._info, self._target
        info.starting = True
        try:
            if clock:
                info.clock_session = target.clock_session(_target_options(self._config))  # type: ignore[attr-defined]
                return info.clock_session
            info.session = target.start(_target_options(self._config))
            return info.session
        except TargetConfigError as exc:
            # refused before anything started: its one line is all the run says
            info.starting = info.session is not None or info.clock_session is not None
            pytest.exit(f"stepgraph: target {target.name!r}: {exc}", returncode=2)

    def close(self) -> None:
        """The run-end checks, then the target's stop: of its own session, then of its clock session."""
        info, target = self._info, self._target
        try:
            _run_end_checks(info)
        finally:
            try:
                session = info.session
                if session is not None:
                    _cleanup(info, lambda: target.stop(session), stack=None, what=f"target {target.name!r} stop")
                    if getattr(target, "verifies_cleanup", False):
                        info.cleanup.verified_by.append(f"the {target.name} target")
            finally:
                clock_session = info.clock_session
                if clock_session is not None:
                    _cleanup(info, lambda: target.stop(clock_session), stack=None, what=f"target {target.name!r} clock stop")


@pytest.fixture(scope="session")
def stepgraph_run(pytestconfig: pytest.Config) -> Iterator[RunSessions]:
    """The run's target sessions (none started yet). At the end of the run, what steps registered
    for its end (`info.run_finalizers`, e.g. verifying nothing is left) runs, then every session
    started stops.

    The run-end checks are this fixture's, not a fixture of their own: pytest-bdd looks through
    every fixture name at every step, and every scenario's fixtures resolve theirs again."""
    sessions = RunSessions(pytestconfig)
    pytestconfig.stash[RUN_SESSIONS] = sessions
    try:
        yield sessions
    finally:
        sessions.close()


@pytest.fixture(scope="session")
def stepgraph_session(stepgraph_run: RunSessions) -> TargetSession:
    """The target session, started once for the run (by the first scenario that needs it, or here)."""
    return stepgraph_run.of(None)


def _run_end_checks(info: RunInfo) -> None:
    __tracebackhide__ = True
    stack = info.run_finalizers
    try:
        _cleanup(info, lambda: stack.run(info.cleanup_budget_s), stack=None, what="run-end checks")
    finally:
        info.cleanup.verified_by += stack.ran


@pytest.fixture
def stepgraph_scenario(request: pytest.FixtureRequest) -> Iterator[ScenarioRuntime]:
    """Bindings and finalizers of one scenario; the finalizers run at its teardown, always.

    The first scenario makes the run's sessions (`stepgraph_run`); the others use those, instead
    of resolving that fixture, and the fixtures it needs, again for each. A scenario that needs
    none of the target's capabilities runs on the target's clock session, when it offers one. The
    node of a per-node run is the item's `stepgraph_node` parameter, read from the item: a
    fixture of that name (None in every other run) would be one more name pytest-bdd looks
    through at every step of every run."""
    __tracebackhide__ = True
    info = request.config.stash[RUN_INFO]
    sessions = request.config.stash.get(RUN_SESSIONS, None) or request.getfixturevalue("stepgraph_run")
    scenario_info = request.node.stash.get(ITEM_SCENARIO, None)
    target_session = sessions.of(scenario_info.needs if scenario_info is not None else None)
    session, cache = target_session, info.cache if target_session is info.session else info.clock_cache
    node = bound_node(request.node)
    if node is not None:  # API clients and handles are per node: they carry the node's name
        session = NodeSession(target_session, node)
        cache = cache.setdefault(("node", node), {})
    runtime = ScenarioRuntime(session, cache, info.run_finalizers, info.cleanup.notes, node=request.node)
    try:
        yield runtime
    finally:
        _cleanup(info, lambda: runtime.finalizers.run(info.cleanup_budget_s), stack=runtime.finalizers, what="compensations")


class CleanupTookTooLong(AssertionError):
    """A cleanup ran out of its time bound; the message names what it did not undo."""


def _cleanup(info: RunInfo, run: Callable[[], None], *, stack: FinalizerStack | None, what: str) -> None:
    """Run one piece of cleanup and put what it did into the run's ledger.

    In an ordinary run a failure is raised (the scenario errors, the run fails); a Ctrl-C is held
    until pytest has finished the teardown it arrived in, then raised. Once the run is
    interrupted (or ended by pytest.exit), pytest tears fixtures down from its session end, where
    an exception would end in a raw traceback and skip the rest of the cleanup: failures are then
    printed as one line each and the run ends with pytest's interrupted exit code (or the one
    pytest.exit gave). A second Ctrl-C during the cleanup
    stops it, printing exactly what is left; so does the cleanup's time bound, and fails the run.
    """
    __tracebackhide__ = True
    try:
        run()
    except CleanupInterrupted as exc:
        _record(info, stack)
        info.cleanup.left += [f"not undone: {d}" for d in exc.left if f"not undone: {d}" not in info.cleanup.left]
        sys.stderr.write(f"stepgraph: interrupted again during cleanup — left as is: {'; '.join(exc.left)}\n")
        pytest.exit(f"stepgraph: cleanup interrupted; {info.cleanup.summary()}", returncode=pytest.ExitCode.INTERRUPTED)
    except CleanupTimedOut as exc:
        _record(info, stack)  # what a stack did not undo is in the ledger now, for the last line
        if stack is None:
            info.cleanup.left += [f"not done: {d}" for d in exc.left]
        message = f"stepgraph: {what} took longer than {exc.budget_s:g} s (--cleanup-timeout) — left as is: {'; '.join(exc.left)}"
        sys.stderr.write(message + "\n")
        if not info.cleanup.stopped_by:  # the run fails (a stopped one exits with its own code already)
            raise CleanupTookTooLong(message) from None
    except BaseException as exc:
        _record(info, stack)
        if stack is None and not isinstance(exc, KeyboardInterrupt):  # a check at the end: what it found is left
            info.cleanup.left += _found(exc)
        if isinstance(exc, KeyboardInterrupt) and not info.cleanup.stopped_by:
            # Raised out of a fixture teardown, it would make pytest drop the remaining teardowns
            # of that scope (the target's stop among them): held until the teardown is complete.
            info.cleanup.pending_interrupt = info.cleanup.pending_interrupt or exc
            return
        if not info.cleanup.stopped_by:
            raise
        if not isinstance(exc, KeyboardInterrupt):
            sys.stderr.write(f"stepgraph: {what} failed after {info.cleanup.stopped_by}: {' '.join(str(exc).split())}\n")
    else:
        _record(info, stack)


def _found(exc: BaseException) -> list[str]:
    """The items of a check's "…:\n  - a\n  - b" message, else the message on one line. Checks
    that ran as finalizers fail together in one FinalizerError: each is read on its own, so the
    ledger holds the leftovers themselves, not the heading of the check that found them."""
    if isinstance(exc, FinalizerError):
        return [item for _, failure in exc.failures for item in _found(failure)]
    lines = str(exc).splitlines()
    items = [line.strip()[2:] for line in lines[1:] if line.strip().startswith("- ")]
    return items or [" ".join(str(exc).split()) or type(exc).__name__]


def _record(info: RunInfo, stack: FinalizerStack | None) -> None:
    if stack is not None:
        info.cleanup.record(stack)
        stack.ran, stack.failed, stack.left = [], [], []
