"""The intermediate representation both syntaxes compile to: features, scenarios and step calls.

IR equality ignores source locations, so a scenario converted between Gherkin and YAML compares
equal to the original (`stepgraph convert` relies on that).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .bindings import Ref
from .diagnostics import Location
from .phrases import JOINT_PHRASE, Window
from .registry import Params, StepDecl
from .units import Duration

_NOWHERE = Location("<memory>")


@dataclass(frozen=True)
class StepCall:
    """One use of a library step: validated parameters, optional binding and time window."""

    decl: StepDecl = field(compare=False)
    step_id: str
    params: Params
    bind_as: str | None = None
    within: Duration | None = None  # comes to hold before this much time has passed
    throughout: Duration | None = None  # holds at every observation for this long
    location: Location = field(default=_NOWHERE, compare=False)

    def __init__(
        self,
        decl: StepDecl,
        step_id: str,
        params: Params,
        bind_as: str | None = None,
        within: Duration | None = None,
        throughout: Duration | None = None,
        location: Location = _NOWHERE,
    ) -> None:
        # Set straight into the instance's dict: half the time of the generated frozen __init__'s
        # object.__setattr__ per field, and compiling makes one for every step. Still frozen.
        fields = self.__dict__
        fields["decl"], fields["step_id"], fields["params"], fields["bind_as"] = decl, step_id, params, bind_as
        fields["within"], fields["throughout"], fields["location"] = within, throughout, location

    @property
    def window(self) -> Window | None:
        """The check's time window (`within` or `throughout`), if it has one."""
        if self.within is not None:
            return Window("within", self.within)
        if self.throughout is not None:
            return Window("throughout", self.throughout)
        return None

    @property
    def reads(self) -> list[str]:
        """Names this call reads, in field order."""
        return [ref.name for ref in _refs(self.params)]

    def text(self) -> str:
        """The canonical Gherkin text (without keyword)."""
        values: dict[str, Any] = {name: getattr(self.params, name) for name in type(self.params).model_fields}
        if self.bind_as is not None:
            values["as"] = self.bind_as
        body = self.decl.phrase.render(values)
        return f"{self.window} {body}" if self.window is not None else body


@dataclass(frozen=True)
class JointCheck:
    """Checks judged together in one window: under `within`, all of them hold at one observation
    before the window closes; under `throughout`, all of them hold at every observation of it.

    Its checks carry no window of their own. Their bindings are made once the group holds, from
    the observation at which it did."""

    window: Window
    checks: tuple[StepCall, ...]
    location: Location = field(default=Location("<memory>"), compare=False)

    step_id = "expect.together"
    bind_as = None

    @property
    def reads(self) -> list[str]:
        return [name for call in self.checks for name in call.reads]

    def text(self) -> str:
        """The canonical Gherkin text of its header line (its checks follow in a doc string)."""
        return f"{self.window} {JOINT_PHRASE}"


#: One step of a scenario: a step call, or checks judged together in one window.
Step = StepCall | JointCheck


def step_calls(steps: Iterable[Step]) -> Iterator[StepCall]:
    """Every step call, those inside joint checks included, in order."""
    for step in steps:
        if isinstance(step, JointCheck):
            yield from step.checks
        else:
            yield step


@dataclass(frozen=True)
class Tags:
    """Tags by meaning: `@id:B5`, `@design:8.5.7`, `@needs:nvml`, and everything else."""

    id: str | None = None
    design: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    other: tuple[str, ...] = ()
    #: Where each tag was written, as ("needs:nvml", location) pairs: a check on one tag points at
    #: it, not at the line of the scenario it belongs to. Not part of the tags' meaning.
    written_at: tuple[tuple[str, Location], ...] = field(default=(), compare=False)

    def location_of(self, tag: str) -> Location | None:
        return next((where for written, where in self.written_at if written == tag), None)

    def as_gherkin(self) -> list[str]:
        out = [f"id:{self.id}"] if self.id else []
        out += [f"design:{d}" for d in self.design] + [f"needs:{n}" for n in self.needs] + list(self.other)
        return out


@dataclass(frozen=True)
class Scenario:
    name: str
    tags: Tags = Tags()
    description: str = ""
    steps: tuple[Step, ...] = ()
    location: Location = field(default=Location("<memory>"), compare=False)
    #: For one row of a Gherkin Scenario Outline: the outline's name (the IR holds each row expanded).
    outline: str | None = field(default=None, compare=False)
    example: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # that row's (column, value) pairs
    #: The Gherkin `Rule:` the scenario is under; its tags and Background steps are already in the scenario's.
    rule: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Feature:
    name: str
    tags: Tags = Tags()
    description: str = ""
    background: tuple[Step, ...] = ()
    scenarios: tuple[Scenario, ...] = ()
    location: Location = field(default=Location("<memory>"), compare=False)
    syntax: str = field(default="gherkin", compare=False)  # "gherkin" or "yaml"

    def scenario_id(self, scenario: Scenario) -> str | None:
        return scenario.tags.id or self.tags.id

    def design_ids(self, scenario: Scenario) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.tags.design + scenario.tags.design))

    def needs(self, scenario: Scenario) -> frozenset[str]:
        """What the scenario needs: declared tags plus every step's declared needs (static check 5)."""
        calls = step_calls(self.background + scenario.steps)
        return frozenset(self.tags.needs) | frozenset(scenario.tags.needs) | frozenset().union(*(c.decl.needs for c in calls))


@functools.cache  # a model's fields are fixed once its class is made
def _field_names(model: type[Params]) -> tuple[str, ...]:
    return tuple(model.model_fields)


#: Values that hold no binding (most parameter values): read without the checks below.
_PLAIN = frozenset({str, int, float, bool, type(None)})


def _refs(value: Any) -> list[Any]:
    if type(value) in _PLAIN:
        return []
    if isinstance(value, Ref):
        return [value]
    if isinstance(value, Params):
        found = []
        for name in _field_names(type(value)):
            field_value = getattr(value, name)
            if type(field_value) not in _PLAIN:  # (most are: no call for them)
                found += _refs(field_value)
        return found
    if isinstance(value, list | tuple | set | frozenset):
        return [r for v in value for r in _refs(v)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in _refs(v)]
    return []
