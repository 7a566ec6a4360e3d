"""Scenario files → pytest collectors: compile, render YAML to Gherkin, hand scenarios to pytest-bdd.

Each file under `stepgraph_paths` is compiled (all static checks; errors become a collection
error listing every `file:line:col` line). YAML is rendered to a generated `.feature` in a
temporary folder with a `@source:<file>:<line>` tag per scenario. Every tag becomes a registered
marker. Scenarios are bound through pytest-bdd's public `scenario()` decorator.
"""

from __future__ import annotations

import re
import tempfile
import types
from pathlib import Path

import pytest
from gherkin.parser import Parser
from pytest_bdd import scenario as bdd_scenario

from .bdd_steps import register_steps
from .compiler import YAML_SUFFIXES, compile_file
from .diagnostics import Location
from .ir import Feature, Scenario
from .registry import REGISTRY, Registry, StepDeclarationError
from .render import RenderError, to_gherkin
from .runinfo import RUN_INFO, ScenarioInfo

GENERATED_DIR = pytest.StashKey[Path]()
TAG_KINDS = {
    "id": "requirement id, e.g. @id:B5",
    "design": "design-doc id, e.g. @design:8.5.7",
    "needs": "capability, e.g. @needs:nvml",
    "source": "the YAML file and line a generated scenario comes from",
}


def _registry() -> Registry:
    REGISTRY.load_entry_points()
    return REGISTRY


class _MarkerLine(str):
    """A `markers` ini line whose name may contain ':' (pytest splits a line at its first ':',
    which would turn `id:B5` into `id`); it splits at ': ' instead, so `id:B5` is registered."""

    def split(self, sep: str | None = None, maxsplit: int = -1) -> list[str]:  # type: ignore[override]
        if sep == ":":
            return str.split(self, ": ", maxsplit)
        return str.split(self, sep, maxsplit)


def register_tag_marker(config: pytest.Config, tag: str) -> None:
    """Make a scenario tag a registered marker, so `--strict-markers` and `-m 'id:B5'` accept it."""
    kind = tag.partition(":")[0]
    meaning = TAG_KINDS.get(kind, "scenario tag") if ":" in tag else "scenario tag"
    if not any(str(line).startswith(f"{tag}: ") for line in config.getini("markers")):
        config.addinivalue_line("markers", _MarkerLine(f"{tag}: stepgraph {kind if ':' in tag else 'tag'} ({meaning})"))


class ScenarioModule(pytest.Module):
    """One scenario file, compiled, then presented to pytest as a module of pytest-bdd scenarios."""

    def _getobj(self) -> types.ModuleType:
        config = self.config
        info = config.stash[RUN_INFO]
        try:
            registry = _registry()
        except StepDeclarationError as exc:
            raise self.CollectError(f"stepgraph: {exc}") from None
        compiled = compile_file(
            self.path,
            registry,
            design_ids=info.design_ids,
            design_source=info.design_source,
            display=self.nodeid.split("::")[0] or self.path.name,
        )
        if not compiled.ok:
            raise self.CollectError("\n".join(str(d) for d in compiled.diagnostics))
        assert compiled.feature is not None
        feature = compiled.feature
        clashes = [
            f"{s.location}: scenario id {sid!r} is also used at {info.ids[sid]} — ids name one scenario each"
            for s in feature.scenarios
            if (sid := feature.scenario_id(s)) is not None and info.ids.setdefault(sid, s.location).file != s.location.file
        ]
        if clashes:
            raise self.CollectError("\n".join(clashes))
        is_yaml = self.path.suffix in YAML_SUFFIXES
        try:
            feature_file = self._render_yaml(feature, compiled.display) if is_yaml else self.path
        except RenderError as exc:
            raise self.CollectError(f"{compiled.display}: {exc} — make it one line") from None
        line_maps = _line_maps(feature_file, feature, compiled.display)
        module = types.ModuleType(self.path.stem)
        module.__file__ = str(self.path)
        register_steps(config, registry)
        for tag in {t for s in feature.scenarios for t in _scenario_tags(feature, s, compiled.display, self.path)}:
            register_tag_marker(config, tag)
        self._scenario_by_test: dict[str, ScenarioInfo] = {}
        for scenario in feature.scenarios:
            wrapper = bdd_scenario(str(feature_file), scenario.name, features_base_dir=str(feature_file.parent))(_noop)
            name = _test_name(scenario, set(self._scenario_by_test))
            module.__dict__[name] = wrapper
            scenario_info = ScenarioInfo(
                feature=feature,
                scenario=scenario,
                source=compiled.display,
                feature_file=str(feature_file),
                line_map=line_maps.get(scenario.name, {}),
            )
            info.scenarios[(str(feature_file), scenario.name)] = scenario_info
            self._scenario_by_test[name] = scenario_info
        return module

    def _render_yaml(self, feature: Feature, display: str) -> Path:
        config = self.config
        if GENERATED_DIR not in config.stash:
            config.stash[GENERATED_DIR] = Path(tempfile.mkdtemp(prefix="stepgraph-features-"))
        target = config.stash[GENERATED_DIR] / (re.sub(r"[^\w.-]+", "_", display) + ".feature")
        target.write_text(to_gherkin(feature, lambda s: [f"source:{display}:{s.location.line}"]), encoding="utf-8")
        return target

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        items = super().collect()
        for item in items:
            scenario_info = self._scenario_by_test.get(getattr(item, "originalname", item.name))
            if scenario_info is not None:
                item.stash[ITEM_SCENARIO] = scenario_info
        return items


#: The ScenarioInfo of a collected scenario item (`item.stash[ITEM_SCENARIO]`).
ITEM_SCENARIO = pytest.StashKey[ScenarioInfo]()


def _noop() -> None:
    """A stepgraph scenario; its steps are in the scenario file."""


def _scenario_tags(feature: Feature, scenario: Scenario, display: str, path: Path) -> list[str]:
    tags = feature.tags.as_gherkin() + scenario.tags.as_gherkin()
    if path.suffix in YAML_SUFFIXES:
        tags.append(f"source:{display}:{scenario.location.line}")
    return tags


def _test_name(scenario: Scenario, taken: set[str]) -> str:
    base = "test_" + (re.sub(r"\W+", "_", scenario.name).strip("_").lower() or "scenario")
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


def _line_maps(feature_file: Path, feature: Feature, display: str) -> dict[str, dict[int, Location]]:
    """Per scenario: line of each step in the file pytest-bdd runs → where the user wrote it."""
    doc = Parser().parse(feature_file.read_text(encoding="utf-8"))
    children = doc["feature"]["children"]
    background_lines = [s["location"]["line"] for c in children if "background" in c for s in c["background"]["steps"]]
    scenario_nodes = [c["scenario"] for c in children if "scenario" in c]
    maps: dict[str, dict[int, Location]] = {}
    for node, scenario in zip(scenario_nodes, feature.scenarios, strict=True):
        lines = background_lines + [s["location"]["line"] for s in node["steps"]]
        calls = feature.background + scenario.steps
        maps[scenario.name] = {line: call.location for line, call in zip(lines, calls, strict=True)}
    return maps
