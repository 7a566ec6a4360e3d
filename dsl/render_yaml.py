"""Feature IR → YAML (for `convert`), with ruamel.yaml's round-trip emitter: flow-style tag lists
and parameters, one block per step. Loading the text gives back an equal IR."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from .ir import Feature, JointCheck, Step, StepCall, Tags


def _heading(doc: CommentedMap, key: str, name: str, tags: Tags, description: str) -> None:
    """A feature's or scenario's name under `key`, then its tags and description, in that order."""
    doc[key] = name
    _yaml_tags(doc, tags)
    if description:
        doc["description"] = description


def to_yaml(feature: Feature) -> str:
    doc = CommentedMap()
    short = len(feature.scenarios) == 1 and feature.name == feature.scenarios[0].name and feature.tags == Tags() and not feature.description
    if short:
        scenario = feature.scenarios[0]
        _heading(doc, "title", scenario.name, scenario.tags, scenario.description)
        if feature.background:
            doc["background"] = _yaml_steps(feature.background)
        doc["steps"] = _yaml_steps(scenario.steps)
    else:
        _heading(doc, "feature", feature.name, feature.tags, feature.description)
        if feature.background:
            doc["background"] = _yaml_steps(feature.background)
        scenarios = CommentedSeq()
        for scenario in feature.scenarios:
            item = CommentedMap()
            _heading(item, "title", scenario.name, scenario.tags, scenario.description)
            item["steps"] = _yaml_steps(scenario.steps)
            scenarios.append(item)
        doc["scenarios"] = scenarios
    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


def _yaml_tags(node: CommentedMap, tags: Tags) -> None:
    if tags.id:
        node["id"] = tags.id
    for key, values in (("design", tags.design), ("needs", tags.needs), ("tags", tags.other)):
        if values:
            seq = CommentedSeq(values)
            seq.fa.set_flow_style()
            node[key] = seq


def _yaml_steps(calls: tuple[Step, ...]) -> CommentedSeq:
    seq = CommentedSeq()
    for group in _groups(calls):
        if isinstance(group, JointCheck):
            joint = CommentedMap()
            joint[group.window.mode] = str(group.window.duration)
            joint["together"] = CommentedSeq(_yaml_step(c) for c in group.checks)
            seq.append(CommentedMap(expect=joint))
            continue
        window = group[0].window
        if window is None:
            seq += [_yaml_step(c) for c in group]
            continue
        expect = CommentedMap()
        expect[window.mode] = str(window.duration)
        expect["all"] = CommentedSeq(_yaml_step(c) for c in group)
        seq.append(CommentedMap(expect=expect))
    return seq


def _groups(calls: tuple[Step, ...]) -> Iterator[list[StepCall] | JointCheck]:
    """Consecutive checks sharing one window become one `expect`; everything else stands alone."""
    group: list[StepCall] = []
    for call in calls:
        if isinstance(call, JointCheck):
            if group:
                yield group
                group = []
            yield call
            continue
        if group and (call.window is None or call.window != group[-1].window):
            yield group
            group = []
        group.append(call)
        if call.window is None:
            yield group
            group = []
    if group:
        yield group


def _yaml_step(call: StepCall) -> Any:
    params: dict[str, Any] = call.params.model_dump(mode="json", exclude_defaults=True)
    if call.bind_as is not None:
        params["as"] = call.bind_as
    if not params:
        return call.decl.key
    body = CommentedMap(params)
    body.fa.set_flow_style()
    return CommentedMap({call.decl.key: body})
