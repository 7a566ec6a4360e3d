"""One pytest-bdd scenario run (hooks + phase reports) → one scenario record (a plain dict).

The record is what travels from an xdist worker to the controller (as JSON in the teardown
report's user_properties) and what the results file stores; its fields are documented in
`results.schema.json`. Outcomes are strict, unlike pytest-bdd's own reports: a scenario with an
undefined step is `undefined` (never `passed`), a scenario skipped before it started still lists
all of its steps (as `skipped`), and errors in setup or teardown are `error`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from pytest_bdd.parser import Scenario, ScenarioTemplate, Step
from pytest_bdd.scenario import scenario_wrapper_template_registry

from stepgraph.dsl.reports.environment import facts_for
from stepgraph.dsl.reports.paths import from_base, portable_value
from stepgraph.dsl.runinfo import ITEM_SCENARIO, ScenarioInfo

ID_TAG = "id:"
DESIGN_TAG = "design:"


@dataclass
class StepRun:
    """What the hooks saw of one step, in execution order."""

    status: str  # running | passed | failed | undefined
    started: float
    duration_s: float = 0.0
    error: str | None = None


@dataclass
class ScenarioRun:
    """Everything gathered for one item while it runs, kept in item.stash."""

    steps: list[StepRun] = field(default_factory=list)
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)


RUN = pytest.StashKey[ScenarioRun]()


def scenario_run(item: pytest.Item) -> ScenarioRun:
    run = item.stash.get(RUN, None)
    if run is None:
        run = item.stash[RUN] = ScenarioRun()
    return run


def scenario_of(item: pytest.Item) -> tuple[ScenarioTemplate, Scenario] | None:
    """The pytest-bdd scenario behind a test item (rendered with its example row), or None."""
    function = getattr(item, "function", None)  # doctests and other plugins' items have none
    template = scenario_wrapper_template_registry.get(function) if function is not None else None
    if template is None:
        return None
    callspec = getattr(item, "callspec", None)
    example = callspec.params.get("_pytest_bdd_example", {}) if callspec else {}
    return template, template.render(example or {})


def phase_of(report: pytest.TestReport) -> dict[str, Any]:
    """A phase report (setup/call/teardown) → outcome, duration and the one line that explains it."""
    phase: dict[str, Any] = {"outcome": report.outcome, "duration_s": round(report.duration, 6)}
    if hasattr(report, "wasxfail"):
        phase["xfail"] = report.wasxfail or "xfail"
    if report.skipped and isinstance(report.longrepr, tuple):
        phase["message"] = str(report.longrepr[2]).removeprefix("Skipped: ")
    elif report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        phase["message"] = crash.message if crash is not None else str(report.longrepr).strip().splitlines()[-1]
    return phase


def build_record(item: pytest.Item, run: ScenarioRun) -> dict[str, Any] | None:
    found = scenario_of(item)
    if found is None:
        return None
    template, scenario = found
    feature = template.feature
    # The item's own scenario (an outline's item: its row, with its own id and its Examples' tags).
    info = item.stash.get(ITEM_SCENARIO, None)
    tags = sorted(scenario.tags | feature.tags | (template.rule.tags if template.rule else set()) | _ir_tags(info))
    outcome, reason = _outcome(run)
    source, line_of = _source(item, feature.filename, info)
    steps = [_step_record(step, run.steps[k] if k < len(run.steps) else None, outcome, reason, line_of)
             for k, step in enumerate(scenario.steps)]
    facts = _portable_facts(item, facts_for(item))
    return {
        "nodeid": item.nodeid,
        "id": info.id if info is not None else scenario_id(item, tags),
        "design": list(info.design) if info is not None else design_ids(tags),
        "name": scenario.name,
        "keyword": template.keyword,
        # where the user wrote it (a YAML scenario's line in its YAML file, an outline row's in its Examples)
        "line": info.scenario.location.line if info is not None else line_of(scenario.line_number),
        "tags": tags,
        "feature": {"name": feature.name, "file": source,
                    "line": info.feature.location.line if info is not None else line_of(feature.line_number),
                    "keyword": feature.keyword, "tags": sorted(feature.tags)},
        "outcome": outcome,
        "reason": reason,
        "duration_s": round(sum(p["duration_s"] for p in run.phases.values()), 6),
        "phases": run.phases,
        "steps": steps,
        "target": facts["target"],
        "world": facts["world"],
        "seed": None if facts["seed"] is None else str(facts["seed"]),
        "fingerprint": facts["fingerprint"],
        "worker": os.environ.get("PYTEST_XDIST_WORKER"),
    }


def scenario_id(item: pytest.Item, tags: list[str]) -> str | None:
    """`@id:B5` → "B5"; each example row of an outline gets its own key, e.g. "B5[350-325]"."""
    base = next((t.removeprefix(ID_TAG) for t in tags if t.startswith(ID_TAG)), None)
    callspec = getattr(item, "callspec", None)
    if base is None or callspec is None or "_pytest_bdd_example" not in callspec.params:
        return base
    return f"{base}[{callspec.id}]"


def _source(item: pytest.Item, feature_file: str, info: ScenarioInfo | None) -> tuple[str, Callable[[int], int]]:
    """The file the user wrote, named from the rootdir, and a map from .feature lines to its lines
    (YAML scenarios run as generated Gherkin)."""
    if info is not None:  # our collector names the file by its node id, which is from the rootdir
        return info.source, lambda line: info.location_of(line).line
    return from_base(feature_file, item.config.rootpath, item.config.invocation_params.dir), lambda line: line


def _ir_tags(info: ScenarioInfo | None) -> set[str]:
    """The tags the language gave the scenario (a row: its Examples' tags too, which pytest-bdd's
    rendered row does not carry)."""
    if info is None:
        return set()
    return {*info.feature.tags.as_gherkin(), *info.scenario.tags.as_gherkin()}


def _portable_facts(item: pytest.Item, facts: dict[str, Any]) -> dict[str, Any]:
    """A target's facts with every absolute path inside the rootdir named from it (a manifests
    folder given that way, say), like every other path in the reports."""
    def portable(value: Any) -> Any:
        return portable_value(value, item.config.rootpath) if isinstance(value, str) else value

    return {name: ({k: portable(v) for k, v in value.items()} if isinstance(value, dict) else portable(value))
            for name, value in facts.items()}


def design_ids(tags: list[str]) -> list[str]:
    """`@design:8.5.7` and `@design:A1,A2` → ["8.5.7", "A1", "A2"] (a leading § is dropped)."""
    ids: list[str] = []
    for tag in tags:
        if tag.startswith(DESIGN_TAG):
            ids += [part.strip().removeprefix("§") for part in tag.removeprefix(DESIGN_TAG).split(",") if part.strip()]
    return ids


def _outcome(run: ScenarioRun) -> tuple[str, str | None]:
    setup, call, teardown = (run.phases.get(w) for w in ("setup", "call", "teardown"))
    if setup and setup["outcome"] == "failed":
        return "error", "setup: " + setup.get("message", "")
    if setup and setup["outcome"] == "skipped":
        return "skipped", setup.get("message")
    undefined = next((s for s in run.steps if s.status == "undefined"), None)
    if undefined is not None:
        return "undefined", undefined.error
    if call and call["outcome"] == "failed":
        return "failed", call.get("message")
    if call and call["outcome"] == "skipped":
        return "skipped", call.get("message") or (f"xfail: {call['xfail']}" if "xfail" in call else None)
    if teardown and teardown["outcome"] == "failed":
        return "error", "teardown: " + teardown.get("message", "")
    return "passed", None


def _step_record(step: Step, seen: StepRun | None, outcome: str, reason: str | None,
                 line_of: Callable[[int], int]) -> dict[str, Any]:
    record: dict[str, Any] = {"keyword": step.keyword, "name": step.name, "line": line_of(step.line_number),
                              "status": "skipped", "duration_s": 0.0}
    if seen is not None:
        status = seen.status
        if status == "running":  # the step never reported back: pytest.skip() or an error outside Exception
            status = "skipped" if outcome == "skipped" else "failed"
        record.update(status=status, duration_s=round(seen.duration_s, 6))
        if seen.error or (status == "skipped" and reason):
            record["error"] = seen.error or reason
    return record
