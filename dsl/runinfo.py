"""What a pytest run knows about stepgraph, for reporters: `run_info(config)`.

Reachable from every pytest-bdd hook (`request.config`) and from `config.stash`:

    info = run_info(config)
    info.target_name, info.facts              # the target and its session's facts
    s = info.scenario(feature.filename, scenario.name)   # ScenarioInfo or None
    s.feature, s.scenario                     # the IR (tags: s.scenario.tags / s.feature.tags)
    s.source                                  # the file the user wrote (.feature or .yaml)
    s.location_of(step.line_number)           # Location in that file (YAML lines for YAML)
    s.needs                                   # capabilities the scenario needs

A collected scenario item carries its own ScenarioInfo: `item.stash[ITEM_SCENARIO]`. Reporters
read that one: an outline's rows may share a name, so a lookup by name can return another row.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from .cleanup import CleanupLedger
from .diagnostics import Location
from .finalizers import FinalizerStack
from .ir import Feature, Scenario, Step

if TYPE_CHECKING:
    from .target import Target, TargetSession


@dataclass
class ScenarioInfo:
    feature: Feature
    scenario: Scenario
    source: str  # display path of the scenario file the user wrote
    feature_file: str  # the .feature pytest-bdd ran (generated for YAML)
    line_map: dict[int, Location] = field(default_factory=dict)  # feature_file line → source location

    @property
    def needs(self) -> frozenset[str]:
        return self.feature.needs(self.scenario)

    @property
    def id(self) -> str | None:
        return self.feature.scenario_id(self.scenario)

    @property
    def design(self) -> tuple[str, ...]:
        return self.feature.design_ids(self.scenario)

    @property
    def calls(self) -> tuple[Step, ...]:
        """The scenario's steps as they run: the feature's Background, then its own (a rule's
        Background first among them)."""
        return self.feature.background + self.scenario.steps

    def location_of(self, line: int) -> Location:
        return self.line_map.get(line, Location(self.source, line, 1))


@dataclass
class RunInfo:
    target_name: str | None = None
    target: Target | None = None
    session: TargetSession | None = None  # the target's own, once a scenario needing it ran
    clock_session: TargetSession | None = None  # the scenarios' that need none of its capabilities
    cache: dict[Any, Any] = field(default_factory=dict)  # per target session (API clients and the like); a dict per node
    clock_cache: dict[Any, Any] = field(default_factory=dict)  # the same, of the clock session
    starting: bool = False  # the target's start was called (it may have been cut short)
    design_ids: Collection[str] | None = None  # plug in a design-doc parser here (static check 9)
    design_source: str = ""
    scenarios: dict[tuple[str, str], ScenarioInfo] = field(default_factory=dict)
    ids: dict[str, Location] = field(default_factory=dict)  # scenario id → where it was first seen
    cleanup: CleanupLedger = field(default_factory=CleanupLedger)  # what the run undid and left
    run_finalizers: FinalizerStack = field(default_factory=FinalizerStack)  # run once, at the end of the run
    cleanup_budget_s: float | None = None  # wall-clock bound of each cleanup (--cleanup-timeout)

    @property
    def facts(self) -> dict[str, Any]:
        """The facts of the target's session, or of its clock session while only that one ran
        (the same facts: a target gives its clock session those its own session will have)."""
        session = self.session if self.session is not None else self.clock_session
        return dict(session.facts) if session is not None else {}

    def scenario(self, feature_filename: str, scenario_name: str) -> ScenarioInfo | None:
        return self.scenarios.get((str(feature_filename), scenario_name))


RUN_INFO = pytest.StashKey[RunInfo]()
#: The ScenarioInfo of a collected scenario item (an outline's item: its row's).
ITEM_SCENARIO = pytest.StashKey[ScenarioInfo]()


def run_info(config: pytest.Config) -> RunInfo:
    return config.stash.setdefault(RUN_INFO, RunInfo())
