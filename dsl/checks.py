"""Static checks over Feature IR → diagnostics: data flow (4), capabilities (5), effects (6),
timing (8), design ids (9), duplicate scenario names/ids, and — across files, in run order —
ordering hazards (7). Checks 1–3 happen while loading.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Collection, Iterable
from typing import TypeVar

from .bindings import SAME_KIND_AS_SOURCE, Reads, Ref
from .diagnostics import Diagnostic, Location
from .files import NamesFile
from .ir import Feature, JointCheck, Scenario, StepCall, step_calls
from .registry import INCREMENTS, Params, Registry
from .target import DEFAULT_TICK_SECONDS
from .units import Duration

#: Capabilities every target vocabulary shares; step declarations add their own `needs`.
BASE_CAPABILITIES = frozenset({"k8s", "k8s-write", "nvml", "dcgm", "planner", "path-a", "path-b", "live"})

M = TypeVar("M")


def known_capabilities(registry: Registry) -> frozenset[str]:
    return BASE_CAPABILITIES.union(*(d.needs for d in registry.declared()))


def check_feature(
    feature: Feature, registry: Registry, design_ids: Collection[str] | None = None, design_source: str = "", *, dataflow: bool = True
) -> list[Diagnostic]:
    found: dict[Diagnostic, None] = {}  # ordered set: background problems are reported once
    flow = _dataflow(feature, registry) if dataflow else []
    for diag in (*flow, *_effects(feature), *_timing(feature), *_capabilities(feature, registry), *_duplicates(feature), *_files(feature)):
        found[diag] = None
    if design_ids is not None:
        for diag in _design(feature, design_ids, design_source):
            found[diag] = None
    return list(found)


def _dataflow(feature: Feature, registry: Registry) -> list[Diagnostic]:
    diags = []
    for scenario in feature.scenarios or [None]:
        bound: dict[str, tuple[StepCall, str | None]] = {}  # name → the call that binds it, and the kind it produces
        for step in feature.background + (scenario.steps if scenario else ()):
            # the checks of a joint check are judged at one observation, and bind once it holds:
            # none of them reads what another of them binds
            group = step.checks if isinstance(step, JointCheck) else (step,)
            for call in group:
                for name in call.reads:
                    if name not in bound:
                        diags.append(
                            Diagnostic(
                                call.location, f"${name} is read before it is bound", f'bind it in an earlier step with as "{name}"',
                                "dataflow",
                            )
                        )
                diags += _kinds(call, bound, registry)
            for call in group:
                if call.bind_as is not None:
                    if call.bind_as in bound:
                        diags.append(
                            Diagnostic(
                                call.location, f'"{call.bind_as}" is already bound', "bindings are immutable — choose another name",
                                "dataflow",
                            )
                        )
                    kind = call.decl.produces
                    if kind == SAME_KIND_AS_SOURCE:
                        kind = next((bound[n][1] for n in call.reads if n in bound), None)
                    bound.setdefault(call.bind_as, (call, kind))
    return diags


def _kinds(call: StepCall, bound: dict[str, tuple[StepCall, str | None]], registry: Registry) -> list[Diagnostic]:
    """A Ref field that reads a kind (`Reads("gpu")`) given a name bound to another kind."""
    diags = []
    for field, reads in _marked_fields(type(call.params), Reads):
        wanted = reads.kind
        ref = getattr(call.params, field)
        if not isinstance(ref, Ref) or ref.name not in bound:
            continue
        producer, kind = bound[ref.name]
        if kind is None or kind == wanted:
            continue
        makers = sorted(d.id for d in registry.declared() if d.produces == wanted)
        how = f"bind it with {' or '.join(makers)}" if makers else f"bind it with a step that produces {wanted}"
        diags.append(
            Diagnostic(
                call.location,
                f"{call.step_id}: ${ref.name} holds {kind} (bound by {producer.step_id} at line {producer.location.line}), "
                f"but parameter {field!r} reads {wanted}",
                how,
                "types",
            )
        )
    return diags


@functools.cache  # a model's fields are fixed once its class is made
def _marked_fields(model: type[Params], marker: type[M]) -> tuple[tuple[str, M], ...]:
    """(field, its first `marker` annotation) for each field of `model` annotated with one."""
    found = ((name, next((m for m in info.metadata if isinstance(m, marker)), None)) for name, info in model.model_fields.items())
    return tuple((name, m) for name, m in found if m is not None)


def _all_calls(feature: Feature) -> list[StepCall]:
    return [*step_calls(feature.background), *(c for s in feature.scenarios for c in step_calls(s.steps))]


def _files(feature: Feature) -> list[Diagnostic]:
    """A file a step names (a `NamesFile` field) that does not exist: found now, not when the run
    reaches the step after minutes of set-up."""
    diags = []
    for call in _all_calls(feature):
        for field, names in _marked_fields(type(call.params), NamesFile):
            value = getattr(call.params, field)
            if not isinstance(value, str):
                continue
            problem = names.missing(value)
            if problem is not None:
                diags.append(Diagnostic(call.location, f"{call.step_id}: {problem[0]}", problem[1], "files"))
    return diags


def _effects(feature: Feature) -> list[Diagnostic]:
    return [
        Diagnostic(
            call.location,
            f"{call.step_id} has effects ({', '.join(sorted(call.decl.mutating_effects))}) but no compensation",
            "declare compensation= in its step library so teardown can undo it",
            "effects",
        )
        for call in _all_calls(feature)
        if call.decl.mutating_effects and call.decl.compensation is None
    ]


def _timing(feature: Feature) -> list[Diagnostic]:
    """A `within` shorter than the check's causal minimum (e.g. one agent tick) cannot pass reliably.
    A joint window must be long enough for each of its checks. Statically a tick counts
    DEFAULT_TICK_SECONDS, the tick of both the twin and live nodes."""
    windows: list[tuple[StepCall, Duration | None, str]] = []
    steps = [*feature.background, *(step for s in feature.scenarios for step in s.steps)]
    for step in steps:
        if isinstance(step, JointCheck):
            within = step.window.duration if step.window.mode == "within" else None
            windows += [(call, within, " (the joint window)") for call in step.checks]
        else:
            windows.append((step, step.within, ""))
    diags = []
    for call, within, which in windows:
        minimum = call.decl.min_within
        if minimum is None or within is None:
            continue
        if within.to_seconds(DEFAULT_TICK_SECONDS) < minimum.to_seconds(DEFAULT_TICK_SECONDS):
            diags.append(
                Diagnostic(
                    call.location,
                    f"within {within}{which} is shorter than {call.step_id} can settle ({minimum})",
                    f"wait at least within {minimum}",
                    "timing",
                )
            )
    return diags


def _capabilities(feature: Feature, registry: Registry) -> list[Diagnostic]:
    known = known_capabilities(registry)
    diags = []
    for owner, location in [(feature.tags, feature.location)] + [(s.tags, s.location) for s in feature.scenarios]:
        for need in owner.needs:
            if need not in known:
                close = difflib.get_close_matches(need, sorted(known), n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(sorted(known))}"
                where = owner.location_of(f"needs:{need}") or location
                diags.append(Diagnostic(where, f"unknown capability {need!r}", hint, "capabilities"))
    return diags


def order_hazards(scenarios: Iterable[tuple[Feature, Scenario]]) -> list[Diagnostic]:
    """Static check 7, over scenarios in run order: an absolute check on shared state that an
    earlier scenario increments (B4 after B5 on the agent's counters) passes or fails by order."""
    diags: list[Diagnostic] = []
    incremented: dict[str, Location] = {}  # resource → the first step that increments it
    for feature, scenario in scenarios:
        calls = list(step_calls(feature.background + scenario.steps))
        for call in calls:
            if not call.decl.absolute:  # (most steps assert no absolute value: no set made for them)
                continue
            for resource in sorted(call.decl.absolute & set(incremented)):
                diags.append(
                    Diagnostic(
                        call.location,
                        f"{call.step_id} asserts the absolute value of {resource}, which an earlier scenario increments "
                        f"({incremented[resource]})",
                        "compare against a baseline taken in this scenario, or run it first",
                        "ordering",
                    )
                )
        for call in calls:
            for effect in call.decl.effects:
                if effect.startswith(INCREMENTS):
                    incremented.setdefault(effect.removeprefix(INCREMENTS), call.location)
    return diags


def _duplicates(feature: Feature) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    names: dict[str, Location] = {}
    ids: dict[str, Location] = {}
    for scenario in feature.scenarios:
        if scenario.name in names:
            diags.append(
                Diagnostic(
                    scenario.location,
                    f"scenario name {scenario.name!r} is used twice (first at line {names[scenario.name].line})",
                    "give each scenario its own name",
                    "duplicates",
                )
            )
        names.setdefault(scenario.name, scenario.location)
        sid = feature.scenario_id(scenario)
        if sid is not None:
            if sid in ids:
                diags.append(
                    Diagnostic(
                        scenario.location,
                        f"scenario id {sid!r} is used twice (first at line {ids[sid].line})",
                        "ids name one scenario each; put @id on the scenarios, not the feature",
                        "duplicates",
                    )
                )
            ids.setdefault(sid, scenario.location)
    return diags


def _design(feature: Feature, design_ids: Collection[str], source: str) -> list[Diagnostic]:
    diags = []
    for scenario in feature.scenarios:
        for ref in feature.design_ids(scenario):
            if ref not in design_ids:
                close = difflib.get_close_matches(ref, sorted(design_ids), n=1)
                hint = f"did you mean {close[0]!r}?" if close else "name an id that the design doc defines"
                where = f" ({source})" if source else ""
                diags.append(Diagnostic(scenario.location, f"design id {ref!r} is not in the design doc{where}", hint, "design"))
    return diags
