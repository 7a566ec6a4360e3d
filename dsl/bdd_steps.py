"""Step declarations → a pytest-bdd step definition, and the per-scenario runtime it runs on.

The registry is registered with pytest-bdd as one step definition whose parser reads every
declared phrase (with the language-level `within <duration>` prefix for checks). The step
function builds a `StepContext` over the scenario's bindings and finalizer stack and runs the call.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from pytest_bdd import step as bdd_step
from pytest_bdd.parsers import StepParser

from .binder import Attachment, attach, bind_joint, make_call
from .bindings import Bindings
from .context import StepContext
from .diagnostics import Location
from .execute import execute_call, execute_joint
from .finalizers import FinalizerStack
from .ir import JointCheck, Step
from .phrases import BIND_FIELD, joint_window
from .registry import Match, Registry
from .target import TargetSession

#: Where the running step was written (set before each step; YAML lines for YAML scenarios).
STEP_LOCATION = pytest.StashKey[Location]()


class RegistryParser(StepParser):
    """One pytest-bdd step parser over the whole registry: a step text matches when exactly one
    declaration reads it (the compiler has already reported undefined and ambiguous steps).

    One definition instead of one per declaration keeps pytest-bdd's per-step lookup, which scans
    every step fixture, independent of how many steps are declared."""

    def __init__(self, registry: Registry) -> None:
        super().__init__("<any stepgraph step>")
        self.registry = registry
        self._seen: dict[str, Match | None] = {}
        self._bound: dict[str, Step] = {}
        self._joints: list[JointCheck] = []  # the scenario's joint checks, found again by their checks
        # pytest-bdd hands a parser the step's text only; the data table or doc string of the step
        # about to run is set here by the plugin's before-step hook (steps run one at a time).
        self.attachment: Attachment | None = None

    def _match(self, text: str) -> Match | None:
        if text not in self._seen:
            matches = self.registry.match(text)
            self._seen[text] = matches[0] if len(matches) == 1 else None
        return self._seen[text]

    def expect(self, steps: Iterable[tuple[str, Step]]) -> None:
        """The steps of the scenario about to run, as the compiler bound them (text → call).

        The compiler has matched every step against every declaration and validated its
        parameters; those calls are used as they are, instead of matching the text again and
        validating again at each step. A text that stands for two different calls in one
        scenario (the same words over two data tables) takes the matching path below."""
        bound: dict[str, Step] = {}
        twice: set[str] = set()
        self._joints = []
        for text, call in steps:
            if bound.setdefault(text, call) != call:
                twice.add(text)
            if isinstance(call, JointCheck):
                self._joints.append(call)
        self._bound = {text: call for text, call in bound.items() if text not in twice}

    def is_matching(self, name: str) -> bool:
        return name in self._bound or self._match(name) is not None or joint_window(name) is not None

    def parse_arguments(self, name: str) -> dict[str, Any] | None:
        call = self._bound.get(name)
        if call is not None:
            self.attachment = None  # already part of the bound call
            return {"sg_call": call}
        window = joint_window(name)
        if window is not None:
            attachment, self.attachment = self.attachment, None
            lines = attachment[1].splitlines() if attachment is not None and attachment[0] == "docstring" else []
            joint, diags = bind_joint(self.registry, window, [(line.strip(), Location("<step>")) for line in lines if line.strip()],
                                      Location("<step>"))
            if joint is None or diags:
                raise ValueError("; ".join(str(d) for d in diags))
            # the compiled one it equals (IR equality ignores positions) knows where its checks are written
            return {"sg_call": next((known for known in self._joints if known == joint), joint)}
        m = self._match(name)
        if m is None:
            return None
        raw = dict(m.raw)
        bind_as = raw.pop(BIND_FIELD, None)
        attachment, self.attachment = self.attachment, None
        problem = attach(m.decl, raw, attachment)
        if problem is not None:
            raise ValueError(" — ".join(problem))
        call, diags = make_call(m.decl, raw, Location("<step>"), bind_as=bind_as, window=m.window)
        if call is None:
            raise ValueError("; ".join(str(d) for d in diags))
        return {"sg_call": call}


def set_attachment(config: pytest.Config, step: Any) -> None:
    """Before a step runs: give the parser the pytest-bdd step's data table or doc string."""
    parser = config.stash.get(PARSER, None)
    if parser is None:
        return
    if getattr(step, "datatable", None) is not None:
        header, *body = step.datatable.raw()
        parser.attachment = ("table", [dict(zip(header, row, strict=True)) for row in body])
    elif getattr(step, "docstring", None) is not None:
        parser.attachment = ("docstring", step.docstring)
    else:
        parser.attachment = None


def expect_steps(config: pytest.Config, steps: Sequence[Any], calls: Sequence[Step]) -> None:
    """Before a scenario runs: give the parser the compiler's call for each of pytest-bdd's steps
    (the same steps in the same order: background, rule background, the scenario's own); after
    it, none. Steps pytest-bdd reads from files stepgraph did not compile are matched as before."""
    parser = config.stash.get(PARSER, None)
    if parser is not None:
        parser.expect(zip((s.name for s in steps), calls, strict=True) if len(steps) == len(calls) else ())


REGISTERED = pytest.StashKey[bool]()
PARSER = pytest.StashKey[RegistryParser]()


def register_steps(config: pytest.Config, registry: Registry) -> None:
    """Register the registry with pytest-bdd as one step definition, once per run.

    pytest-bdd's decorators put the step fixture into their caller's module namespace, so the
    decoration runs as module-level code of a fresh module, which then becomes a pytest plugin:
    its fixture is visible to every scenario. Declarations added later are found too: the
    parser reads the registry at match time."""
    if config.stash.get(REGISTERED, False):
        return
    module = types.ModuleType("stepgraph_steps")
    namespace = module.__dict__
    config.stash[PARSER] = parser = RegistryParser(registry)
    namespace.update(_stepgraph_parser=parser, _stepgraph_step=bdd_step, _stepgraph_run=stepgraph_step)
    exec(compile("_stepgraph_step(_stepgraph_parser)(_stepgraph_run)\n", module.__name__, "exec"), namespace)
    config.pluginmanager.register(module, module.__name__)
    config.stash[REGISTERED] = True


def stepgraph_step(sg_call: Step, stepgraph_scenario: ScenarioRuntime) -> Any:
    """Run one stepgraph step (`sg_call.decl` is its declaration) in the scenario's runtime."""
    __tracebackhide__ = True
    return stepgraph_scenario.run(sg_call)


# pytest-bdd reads a step function's signature twice at every step (which arguments it takes,
# which fixtures to request); a function's own `__signature__` is what `inspect.signature` returns.
stepgraph_step.__signature__ = inspect.signature(stepgraph_step)  # type: ignore[attr-defined]


class ScenarioRuntime:
    """Per scenario: bindings and the finalizer stack over the target session. `node` is the
    scenario's item, where the plugin puts the location of the step about to run."""

    def __init__(
        self,
        session: TargetSession,
        cache: dict[str, Any],
        run_finalizers: FinalizerStack | None = None,
        cleanup_notes: list[str] | None = None,
        node: pytest.Item | None = None,
    ) -> None:
        self.node = node
        self.session = session
        self.cache = cache
        self.bindings = Bindings()
        self.finalizers = FinalizerStack()
        self.run_finalizers = run_finalizers if run_finalizers is not None else FinalizerStack()
        self.cleanup_notes = cleanup_notes if cleanup_notes is not None else []

    def run(self, call: Step, location: Location | None = None) -> Any:
        __tracebackhide__ = True
        if location is None and self.node is not None:
            location = self.node.stash.get(STEP_LOCATION, None)
        if isinstance(call, JointCheck):
            return execute_joint(call, [self.context(check.step_id, str(check.location)) for check in call.checks])
        ctx = self.context(call.step_id, str(location) if location else "")
        return execute_call(call.decl, call.params, ctx, bind_as=call.bind_as, within=call.within, throughout=call.throughout)

    def context(self, step_id: str, location: str) -> StepContext:
        return StepContext(
            session=self.session,
            bindings=self.bindings,
            finalizers=self.finalizers,
            step_id=step_id,
            location=location,
            cache=self.cache,
            run_finalizers=self.run_finalizers,
            cleanup_notes=self.cleanup_notes,
            poll_interval=float(getattr(self.session, "poll_interval", 1.0)),
        )
