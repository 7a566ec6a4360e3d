"""The pytest plugin: scenario files under `stepgraph_paths` → pytest-bdd scenarios on a target.

Gherkin files run as written; YAML files are rendered to generated `.feature` files (under
<rootdir>/.stepgraph/features, kept for the tools that read them) with a `@source:` tag pointing at the YAML. The step registry is
registered with pytest-bdd as one step definition that reads every declared phrase. Files are compiled first, so undefined,
ambiguous and ill-typed steps are collection errors with `file:line:col` lines. Scenarios whose
needs the target lacks are skipped before any setup. A run without scenario paths is untouched.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import interrupts, runid, tempdirs
from .assert_rewriting import take_back_pytest_marks
from .bdd_steps import STEP_LOCATION, expect_steps, set_attachment
from .checks import order_hazards
from .collect import TAG_KINDS, ScenarioModule
from .compiler import SCENARIO_SUFFIXES
from .eventually import CheckFailed, StepRefused
from .exit_heap import freeze_heap_at_exit
from .failures import failure_block
from .ir import step_calls
from .nodes import add_option as add_nodes_option
from .nodes import bound_node, make_scheduler, record_node
from .nodes import parametrize as parametrize_by_node
from .reports.errors import InputError
from .runinfo import ITEM_SCENARIO, RUN_INFO, RunInfo, run_info
from .targeting import (
    ensure_target,
    gate_items,
    stepgraph_run,
    stepgraph_scenario,
    stepgraph_session,
)

# fixtures this plugin provides
__all__ = ["stepgraph_run", "stepgraph_scenario", "stepgraph_session"]


def pytest_addoption(parser: pytest.Parser) -> None:
    # A later pytest run in this process (pytester, `stepgraph run`'s worlds) marks our packages
    # again, and this package is imported already: taken back as this plugin is registered.
    take_back_pytest_marks()
    parser.addini("stepgraph_paths", "folders (or files) whose .feature/.yaml files are stepgraph scenarios", type="paths", default=[])
    parser.addini("stepgraph_design_doc", "Markdown design doc whose ids @design tags must name (static check 9)", default="")
    group = parser.getgroup("stepgraph")
    group.addoption(
        "--target", dest="stepgraph_target", default=None, help="target to run scenarios on (default: twin if installed, else local)"
    )
    group.addoption(
        "--target-option",
        dest="stepgraph_target_options",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="option passed to the target's start(), repeatable",
    )
    group.addoption(
        "--cleanup-timeout",
        dest="stepgraph_cleanup_timeout",
        default=str(DEFAULT_CLEANUP_TIMEOUT_S),
        metavar="SECONDS",
        help=f"wall-clock bound of each cleanup (a scenario's compensations, the run-end checks; default "
        f"{DEFAULT_CLEANUP_TIMEOUT_S:g}): what is not undone by then is named and the run fails",
    )
    add_nodes_option(group)


#: Long enough for a live node's slowest honest cleanup (deletes and pod waits of 120 s each),
#: short enough that a stuck API server ends the run.
DEFAULT_CLEANUP_TIMEOUT_S = 600.0
# Whether an interrupted run in this process froze the heap on its way out (see
# `_InterruptWatch.pytest_unconfigure`): only then does the next run unfreeze it. A heap frozen by
# whoever started this process (`stepgraph run`'s forked worlds) stays frozen, or every collection
# of the run would walk all of it again.
_HEAP_FROZEN_BY_INTERRUPT = [False]
MAX_CLEANUP_TIMEOUT_S = 86400.0


def _cleanup_timeout(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= MAX_CLEANUP_TIMEOUT_S:  # NaN fails too
        pytest.exit(f"stepgraph: --cleanup-timeout {text!r} — give seconds, more than 0 and at most "
                    f"{MAX_CLEANUP_TIMEOUT_S:g} (a day), e.g. --cleanup-timeout 300", returncode=2)
    return seconds


#: Stepgraph runs configured and not yet unconfigured in this process: more than one while a
#: test runs pytest in-process (pytester), inside the run of the test suite.
_runs_configured = 0
_FROZE = pytest.StashKey[bool]()
_OUTER_FROZE = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    global _runs_configured
    _runs_configured += 1
    freeze_heap_at_exit()
    # The first of the run's cleanups to be added is the last to run: after pytest's own last
    # collections of garbage, which then walk only what this run made, as in a run of its own.
    config.add_cleanup(lambda: _unfreeze_for_the_outer_run(config))
    info = run_info(config)
    runid.begin(config)
    info.cleanup_budget_s = _cleanup_timeout(str(config.getoption("stepgraph_cleanup_timeout")))
    interrupts.install()  # SIGTERM too ends the run through pytest's interrupt path, cleaning up
    if _HEAP_FROZEN_BY_INTERRUPT[0]:
        gc.unfreeze()  # what an interrupted earlier run in this process froze
        _HEAP_FROZEN_BY_INTERRUPT[0] = False
    # A run inside another run whose heap is frozen (an in-process run in a test suite that froze
    # its own) leaves the freezing to that run: its collections of garbage already walk only what
    # was made since, and an unfreeze at its end would thaw the outer run's heap too.
    config.stash[_OUTER_FROZE] = _runs_configured > 1 and gc.get_freeze_count() > 0
    stale = tempdirs.sweep_stale()  # what killed runs left in the temp directory
    if stale:
        info.cleanup.notes.append(f"removed {len(stale)} temp folder(s) of killed runs ({', '.join(p.name for p in stale)})")
    config.pluginmanager.register(_InterruptWatch(info, config), "stepgraph-interrupt-watch")
    for kind, meaning in TAG_KINDS.items():
        config.addinivalue_line("markers", f"{kind}: stepgraph tag kind — {meaning}; select with -m '{kind}:VALUE'")
    doc = config.getini("stepgraph_design_doc")
    if doc:
        from .reports.design import requirement_ids  # Markdown parser and all: only a run with a design doc needs it

        path = Path(config.rootpath, doc)
        if not path.is_file():
            pytest.exit(f"stepgraph: design doc {doc!r} (ini stepgraph_design_doc) does not exist — fix the path", returncode=2)
        try:
            info.design_ids, info.design_source = requirement_ids(path), doc
        except InputError as err:
            pytest.exit(f"stepgraph: {err}", returncode=2)


class _InterruptWatch:
    """Marks the run interrupted when pytest sees the KeyboardInterrupt, or ended by pytest.exit
    (pytest calls the same hook for both): from then on pytest tears fixtures down from its
    session end, where cleanup reports failures instead of raising them. It also keeps a Ctrl-C
    that lands in a finalizer from being lost (`interrupts.catch_lost`)."""

    def __init__(self, info: RunInfo, config: pytest.Config) -> None:
        self.info = info
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        interrupts.catch_lost()  # after pytest set its own sys.unraisablehook, as it is configured

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        if isinstance(excinfo.value, pytest.exit.Exception):
            # Not an interrupt: pytest prints only its message (a misconfiguration's exit 2), yet
            # renders its whole traceback first, source and all (0.15-0.3 CPU-s a run). From the
            # line that called pytest.exit on, the message is the same.
            self.info.cleanup.exited = True
            excinfo.traceback = _from_last_shown(excinfo)
            return
        self.info.cleanup.interrupted = True
        if not self.config.getoption("fulltrace", False):  # (no such option without the terminal plugin)
            # The terminal reporter renders the whole traceback (parsing the source file of each of
            # its 60-90 entries) although, without --full-trace, it prints only the line where the
            # interrupt arrived — seconds on a loaded machine, and the compensations run only
            # after it. Only the entries from that line on are kept, so that line is unchanged.
            excinfo.traceback = _from_last_shown(excinfo)

    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.info.cleanup.interrupted and not config.stash.get(_OUTER_FROZE, False):
            # An interrupted run is over once its cleanup ran (the target is stopped): what is left
            # is walking the heap — pytest collects garbage twice more to find unraisable
            # exceptions and the interpreter once more at exit, most of a second on a loaded
            # machine between Ctrl-C and the prompt. Freezing the heap skips those walks; a later
            # run in this process unfreezes it when it starts.
            gc.freeze()
            _HEAP_FROZEN_BY_INTERRUPT[0] = True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        # A Ctrl-C that arrived during one of our fixture teardowns, raised now that all ran.
        __tracebackhide__ = True
        try:
            return (yield)
        finally:
            pending, self.info.cleanup.pending_interrupt = self.info.cleanup.pending_interrupt, None
            if pending is not None:
                raise pending


def _from_last_shown(excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
    """The traceback from its last entry not hidden by `__tracebackhide__` (pytest's crash line) on."""
    entries = list(excinfo.traceback)
    for i in range(len(entries) - 1, -1, -1):
        if not entries[i].ishidden(excinfo):
            return type(excinfo.traceback)(entries[i:])
    return excinfo.traceback


def _unfreeze_for_the_outer_run(config: pytest.Config) -> None:
    """A run inside a test of another run (pytester, an in-process run): once it is over, the
    outer run's heap is collected as before."""
    if config.stash.get(_FROZE, False) and _runs_configured:
        gc.unfreeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    global _runs_configured
    _runs_configured -= 1
    interrupts.uninstall()
    info = config.stash.get(RUN_INFO, None)
    # A run that started a target (or began to) says what it cleaned up; so does an interrupted
    # one that had not begun to: the operator who pressed Ctrl-C learns there was nothing to undo.
    if info is not None and (info.starting or info.cleanup.interrupted):
        _last_line(config, info.cleanup.summary())


def _last_line(config: pytest.Config, text: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(text, bold=True, red="LEFT BEHIND" in text)
    else:
        sys.stderr.write(text + "\n")


def _is_scenario_path(config: pytest.Config, file_path: Path) -> bool:
    if file_path.suffix not in SCENARIO_SUFFIXES:
        return False
    resolved = file_path.resolve()
    return any(resolved == root.resolve() or resolved.is_relative_to(root.resolve()) for root in config.getini("stepgraph_paths"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_by_node(metafunc, ensure_target)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return make_scheduler(config, log, ensure_target)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if _is_scenario_path(parent.config, file_path):
        return ScenarioModule.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: gate and check only what will run, in run order
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    gate_items(config, items)
    mark_order_hazards(items)


def mark_order_hazards(items: list[pytest.Item]) -> None:
    """Static check 7 over the scenarios about to run: a hazardous scenario fails at setup, before
    any of its steps, with the diagnostic."""
    scenarios = [(item, item.stash[ITEM_SCENARIO]) for item in items if ITEM_SCENARIO in item.stash]
    for diag in order_hazards((info.feature, info.scenario) for _, info in scenarios):
        for item, info in scenarios:
            if diag.location in {c.location for c in step_calls(info.feature.background + info.scenario.steps)}:
                item.stash.setdefault(HAZARDS, []).append(str(diag))


HAZARDS = pytest.StashKey[list[str]]()


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze the heap once scenarios are collected: what is alive now (pytest, the step
    libraries, the compiled scenarios) lives until the run ends, and every later collection of
    garbage (the automatic ones during the run, the two pytest makes at its end to find exceptions
    raised by finalizers, the interpreter's at exit) walks only what the run made since. The
    garbage made so far is collected first, while pytest still reports what finalizers raise, so
    nothing already unreachable is kept from them — unless the run only collects."""
    if any(ITEM_SCENARIO in item.stash for item in session.items):
        # A run that only collects ends now: the collection before the freeze would walk the
        # whole heap to run finalizers that a process about to exit need not run (a run inside
        # another one thaws what it froze as it ends, and its garbage is collected then).
        if not session.config.option.collectonly:
            gc.collect()
        if not session.config.stash.get(_OUTER_FROZE, False):
            gc.freeze()
            session.config.stash[_FROZE] = True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    node = bound_node(item)
    if node is not None:
        info = item.config.stash.get(RUN_INFO, None)
        if info is not None:
            record_node(item, node, info.target, info.facts)
    if HAZARDS in item.stash:
        hazards = item.stash[HAZARDS]
        pytest.fail("\n".join(hazards), pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_bdd_before_scenario(request: pytest.FixtureRequest, feature: Any, scenario: Any) -> None:
    # The item's own scenario: an outline's rows may share one name, but each item is one row.
    scenario_info = request.node.stash.get(ITEM_SCENARIO, None)
    expect_steps(request.config, scenario.steps, scenario_info.calls if scenario_info is not None else ())


def pytest_bdd_after_scenario(request: pytest.FixtureRequest, feature: Any, scenario: Any) -> None:
    expect_steps(request.config, (), ())


@pytest.hookimpl(tryfirst=True)
def pytest_bdd_before_step(request: pytest.FixtureRequest, feature: Any, scenario: Any, step: Any, step_func: Any) -> None:
    set_attachment(request.config, step)
    scenario_info = request.node.stash.get(ITEM_SCENARIO, None)  # the item's own: outline rows may share a name
    if scenario_info is not None:
        request.node.stash[STEP_LOCATION] = scenario_info.location_of(step.line_number)


#: The step that failed in a scenario item: (where it is written, its text, the failure).
FAILED_STEP = pytest.StashKey[tuple[str, str, BaseException]]()


@pytest.hookimpl(tryfirst=True)
def pytest_bdd_step_error(
    request: pytest.FixtureRequest, feature: Any, scenario: Any, step: Any, step_func: Any, step_func_args: Any, exception: BaseException
) -> None:
    location = request.node.stash.get(STEP_LOCATION, None)
    request.node.stash[FAILED_STEP] = (str(location or f"{feature.filename}:{step.line_number}"), f"{step.keyword} {step.name}", exception)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed check of a scenario is reported as one block (see failures.py), not a traceback."""
    report = yield
    failed = item.stash.get(FAILED_STEP, None)
    if report.when == "call" and report.failed and failed is not None and ITEM_SCENARIO in item.stash:
        location, text, exception = failed
        report.stepgraph_failed_step = f"{location}: {text}"  # type: ignore[attr-defined]
        if isinstance(exception, CheckFailed | StepRefused):
            info = item.stash[ITEM_SCENARIO]
            report.longrepr = failure_block(location, text, info.scenario.name, str(info.scenario.location), exception)
    if report.skipped and ITEM_SCENARIO in item.stash:
        report.stepgraph_skipped = True  # type: ignore[attr-defined]
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    """The word the terminal (and the gherkin reporter) prints for a scenario: a failure names its
    step, a skip its reason."""
    failed_step = getattr(report, "stepgraph_failed_step", None)
    if failed_step is not None:
        return "failed", "F", f"FAILED at {failed_step}"
    if getattr(report, "stepgraph_skipped", False) and isinstance(report.longrepr, tuple):
        return "skipped", "s", f"SKIPPED ({str(report.longrepr[2]).removeprefix('Skipped: ')})"
    return None
