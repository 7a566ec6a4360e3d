"""Step declarations → pytest-bdd step definitions, and the per-scenario runtime they run on.

Every declaration becomes one pytest-bdd step definition whose parser is the declaration's phrase
(with the language-level `within <duration>` prefix for checks). The step function builds a
`StepContext` over the scenario's bindings and finalizer stack and runs the call.
"""

from __future__ import annotations

import types
from typing import Any

import pytest
from pytest_bdd import step as bdd_step
from pytest_bdd.parsers import StepParser

from .binder import make_call
from .bindings import Bindings
from .context import StepContext
from .diagnostics import Location
from .execute import execute_call
from .finalizers import FinalizerStack
from .ir import StepCall
from .phrases import BIND_FIELD
from .registry import Match, Registry, StepDecl, match_decl
from .target import TargetSession

#: Where the running step was written (set before each step; YAML lines for YAML scenarios).
STEP_LOCATION = pytest.StashKey[Location]()


class DeclParser(StepParser):
    """A pytest-bdd step parser backed by one step declaration (results cached per step text)."""

    def __init__(self, decl: StepDecl) -> None:
        super().__init__(decl.phrase.text)
        self.decl = decl
        self._seen: dict[str, Match | None] = {}

    def _match(self, text: str) -> Match | None:
        if text not in self._seen:
            self._seen[text] = match_decl(self.decl, text)
        return self._seen[text]

    def is_matching(self, name: str) -> bool:
        return self._match(name) is not None

    def parse_arguments(self, name: str) -> dict[str, Any] | None:
        m = self._match(name)
        if m is None:
            return None
        raw = dict(m.raw)
        bind_as = raw.pop(BIND_FIELD, None)
        call, diags = make_call(self.decl, raw, Location("<step>"), bind_as=bind_as, within=m.within)
        if call is None:
            raise ValueError("; ".join(str(d) for d in diags))
        return {"sg_call": call}


REGISTERED = pytest.StashKey[set[str]]()


def register_steps(config: pytest.Config, registry: Registry) -> None:
    """Register every declaration not yet registered as a pytest-bdd step definition, once per run.

    pytest-bdd's decorators put the step fixture into their caller's module namespace, so the
    decoration runs as module-level code of a fresh module, which then becomes a pytest plugin:
    its fixtures are visible to every scenario."""
    done = config.stash.setdefault(REGISTERED, set())
    new = [decl for decl in registry if decl.id not in done]
    if not new:
        return
    module = types.ModuleType(f"stepgraph_steps_{len(done)}")
    namespace = module.__dict__
    namespace["_stepgraph_defs"] = [(DeclParser(decl), _step_function(decl)) for decl in new]
    namespace["_stepgraph_step"] = bdd_step
    code = compile("for _p, _f in _stepgraph_defs:\n    _stepgraph_step(_p)(_f)\n", module.__name__, "exec")
    exec(code, namespace)
    config.pluginmanager.register(module, module.__name__)
    done.update(decl.id for decl in new)


def _step_function(decl: StepDecl) -> Any:
    def step_function(sg_call: StepCall, stepgraph_scenario: ScenarioRuntime, request: pytest.FixtureRequest) -> Any:
        __tracebackhide__ = True
        return stepgraph_scenario.run(sg_call, request.node.stash.get(STEP_LOCATION, None))

    step_function.__name__ = step_function.__qualname__ = decl.id.replace(".", "__")
    step_function.__doc__ = decl.doc
    step_function.__stepgraph_decl__ = decl  # type: ignore[attr-defined]
    return step_function


class ScenarioRuntime:
    """Per scenario: bindings and the finalizer stack over the target session."""

    def __init__(self, session: TargetSession, cache: dict[str, Any]) -> None:
        self.session = session
        self.cache = cache
        self.bindings = Bindings()
        self.finalizers = FinalizerStack()

    def run(self, call: StepCall, location: Location | None) -> Any:
        __tracebackhide__ = True
        ctx = StepContext(
            session=self.session,
            bindings=self.bindings,
            finalizers=self.finalizers,
            step_id=call.step_id,
            location=str(location) if location else "",
            cache=self.cache,
            poll_interval=float(getattr(self.session, "poll_interval", 1.0)),
        )
        return execute_call(call.decl, call.params, ctx, bind_as=call.bind_as, within=call.within)
