"""Scenario files → pytest collectors: compile, render YAML to Gherkin, hand scenarios to pytest-bdd.

Each file under `stepgraph_paths` is compiled (all static checks; errors become a collection
error listing every `file:line:col` line). YAML is rendered to a generated `.feature` under
<rootdir>/.stepgraph/features with a `@source:<file>:<line>` tag per scenario. Every tag becomes a registered
marker. Scenarios are bound through pytest-bdd's public `scenario()` decorator.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import re
import secrets
import types
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pytest_bdd import feature as bdd_feature
from pytest_bdd import scenario as bdd_scenario
from pytest_bdd.gherkin_parser import GherkinDocument
from pytest_bdd.parser import FeatureParser

from .bdd_steps import register_steps
from .compiler import YAML_SUFFIXES, compile_file
from .diagnostics import Location
from .ir import Feature, Scenario
from .load_gherkin import parse_document, substitute
from .registry import REGISTRY, Registry, StepDeclarationError
from .render import RenderError, to_gherkin
from .runinfo import ITEM_SCENARIO, RUN_INFO, ScenarioInfo

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


_MARKED = pytest.StashKey[set[str]]()


def register_tag_marker(config: pytest.Config, tag: str) -> None:
    """Make a scenario tag a registered marker, so `--strict-markers` and `-m 'id:B5'` accept it.

    The tags registered so far are kept in a set: looking each one up in the `markers` ini lines
    made registering n tags take n² steps."""
    marked = config.stash.get(_MARKED, None)
    if marked is None:
        marked = config.stash[_MARKED] = {str(line).split(": ", 1)[0] for line in config.getini("markers") if ": " in str(line)}
    if tag in marked:
        return
    marked.add(tag)
    kind = tag.partition(":")[0]
    meaning = TAG_KINDS.get(kind, "scenario tag") if ":" in tag else "scenario tag"
    config.addinivalue_line("markers", _MarkerLine(f"{tag}: stepgraph {kind if ':' in tag else 'tag'} ({meaning})"))


class ScenarioModule(pytest.Module):
    """One scenario file, compiled, then presented to pytest as a module of pytest-bdd scenarios."""

    def _getobj(self) -> types.ModuleType:
        # Compiling a file and handing it to pytest-bdd makes objects that live as long as the run
        # (the IR, pytest-bdd's feature, the test functions) and temporaries that reference
        # counting frees: an automatic collection of garbage in between walks all that was made
        # so far and finds next to nothing. So none runs while it is made; the next automatic
        # collection, and the one before the heap is frozen once all is collected, come as ever.
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._module()
        finally:
            if enabled:
                gc.enable()

    def _module(self) -> types.ModuleType:
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
        doc = parse_document(feature_file.read_text(encoding="utf-8"))  # the text pytest-bdd will run
        _give_pytest_bdd(feature_file, doc)
        line_maps = _line_maps(doc, feature)
        module = types.ModuleType(self.path.stem)
        module.__file__ = str(self.path)
        register_steps(config, registry)
        for tag in _file_tags(doc):
            register_tag_marker(config, tag)
        self._scenario_by_test: dict[str, ScenarioInfo] = {}
        by_name_in_file: dict[str, ScenarioInfo] = {}
        for name_in_file, scenario in _runnable(feature):
            wrapper = _scenario_test(feature_file, name_in_file)
            wrapper.place_as = _located_at(self.path, scenario.location.line)  # type: ignore[attr-defined]
            if scenario.outline is not None:
                _name_rows(config, wrapper, [s for s in feature.scenarios if s.outline == scenario.outline], feature)
            name = _test_name(name_in_file, set(self._scenario_by_test))
            module.__dict__[name] = wrapper
            scenario_info = ScenarioInfo(
                feature=feature,
                scenario=scenario,
                source=compiled.display,
                feature_file=str(feature_file),
                line_map=line_maps.get(name_in_file, {}),
            )
            info.scenarios[(str(feature_file), name_in_file)] = scenario_info
            self._scenario_by_test[name] = by_name_in_file[name_in_file] = scenario_info
        for row in (s for s in feature.scenarios if s.outline is not None):
            # pytest-bdd names each outline row by rendering <placeholders> in the outline's name
            rendered = substitute(row.outline or "", dict(row.example))
            info.scenarios[(str(feature_file), rendered)] = dataclasses.replace(by_name_in_file[row.outline or ""], scenario=row)
        return module

    def _render_yaml(self, feature: Feature, display: str) -> Path:
        target = generated_dir(self.config) / (re.sub(r"[^\w.-]+", "_", display) + ".feature")
        _write_atomically(target, to_gherkin(feature, lambda s: [f"source:{display}:{s.location.line}"]))
        return target

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        items = list(super().collect())
        for item in items:
            scenario_info = self._scenario_by_test.get(getattr(item, "originalname", item.name))
            if scenario_info is None:
                continue
            # An outline's items are pytest-bdd's parametrization, one per example row: link the row.
            callspec = getattr(item, "callspec", None)
            example = callspec.params.get("_pytest_bdd_example") if callspec is not None else None
            if example:
                rows = [s for s in scenario_info.feature.scenarios if s.outline == scenario_info.scenario.outline]
                row = next((s for s in rows if dict(s.example) == dict(example)), scenario_info.scenario)
                scenario_info = dataclasses.replace(scenario_info, scenario=row)
            item.stash[ITEM_SCENARIO] = scenario_info
        return items


class _ParsedFeature(FeatureParser):
    """pytest-bdd's reading of a feature file, from a document already parsed instead of the file."""

    def __init__(self, path: Path, doc: dict[str, Any]) -> None:
        super().__init__(str(path.parent), str(path))
        self._doc = doc

    def _parse_feature_file(self) -> GherkinDocument:
        return GherkinDocument.from_dict(self._doc)


def _give_pytest_bdd(feature_file: Path, doc: dict[str, Any]) -> None:
    """Put the feature into pytest-bdd's feature cache, where `scenario()` looks before it parses
    the file again; built by pytest-bdd's own FeatureParser, so it is what pytest-bdd would read.
    The entry is replaced on every collection: a file edited between two runs in one process is
    never served stale."""
    key = os.path.abspath(os.path.join(str(feature_file.parent), str(feature_file)))  # get_feature's key
    bdd_feature.features[key] = _ParsedFeature(feature_file, doc).parse()


def generated_dir(config: pytest.Config) -> Path:
    """Where YAML scenarios are rendered to the `.feature` files pytest-bdd runs: <rootdir>/.stepgraph/features.

    Inside the rootdir, and kept after the run, because tools that read pytest-bdd's view of a run
    (allure-pytest-bdd, pytest-bdd's own --cucumberjson) name feature files relative to the rootdir
    and expect them to exist. The file for a YAML file is always the same name, so runs overwrite
    rather than accumulate; pytest does not collect from dot-folders.
    """
    return config.rootpath / ".stepgraph" / "features"


def _write_atomically(path: Path, text: str) -> None:
    """Runs and xdist workers may render the same file at once: each replaces it whole, never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _located_at(path: Path, line: int) -> types.FunctionType:
    """A function whose code "is" at `path:line`. pytest reports a test's location from its
    function's code, or from its `place_as`; this makes reports (and -v) point at the scenario the
    user wrote instead of pytest-bdd's wrapper. The code is one function's, given the file and
    first line (compiling a source padded to the line took time growing with the line)."""
    return types.FunctionType(_SCENARIO_CODE.replace(co_filename=str(path), co_firstlineno=max(line, 1)), {})


def _scenario() -> None:
    pass


_SCENARIO_CODE = _scenario.__code__.replace(co_name="scenario", co_qualname="scenario")


def _name_rows(config: pytest.Config, wrapper: Any, rows: list[Scenario], feature: Feature) -> None:
    """pytest-bdd parametrizes an outline by its example rows, named by their values (pytest shows
    `325×3` as `325\\xd7 3`) and marked with the outline's tags only. Each row here is named by its
    own id (`@id:O1` → `O1.2`) or by its values in plain ASCII, and marked with its id, so
    `-m 'id:O1.2'` selects it."""
    marks = list(getattr(wrapper, "pytestmark", []))
    for index, mark in enumerate(marks):
        if mark.name != "parametrize" or mark.args[0] != "_pytest_bdd_example":
            continue
        params, taken = [], set()
        for number, param in enumerate(mark.args[1], 1):
            row = next((r for r in rows if dict(r.example) == dict(param.values[0])), None)
            row_id = feature.scenario_id(row) if row is not None else None
            label = row_id or readable_id("-".join(param.values[0].values())) or f"row{number}"
            label = f"{label}-{number}" if label in taken else label
            taken.add(label)
            extra = []
            if row_id is not None:
                register_tag_marker(config, f"id:{row_id}")
                extra.append(getattr(pytest.mark, f"id:{row_id}"))
            params.append(pytest.param(*param.values, id=label, marks=[*param.marks, *extra]))
        marks[index] = pytest.mark.parametrize(mark.args[0], params, **mark.kwargs).mark
    wrapper.pytestmark = marks


def readable_id(text: str) -> str:
    """A test id in plain ASCII that still reads like the text: `325×3, 375` → `325x3_375`."""
    ascii_text = unicodedata.normalize("NFKD", text.replace("×", "x")).encode("ascii", "ignore").decode()
    return re.sub(r"[^\w.:+-]+", "_", ascii_text).strip("_")


def _noop() -> None:
    """A stepgraph scenario; its steps are in the scenario file."""


def _scenario_test(feature_file: Path, name: str) -> Any:
    """pytest-bdd's test function of one scenario of `feature_file`.

    A function of its own on purpose: pytest-bdd's `scenario` looks up its caller's file with
    `inspect.getframeinfo`, whose cost grows with how far into its code the caller is (it walks
    the code's positions up to the call): 35 µs from here, hundreds from the middle of a collector."""
    return bdd_scenario(str(feature_file), name, features_base_dir=str(feature_file.parent))(_noop)


def _file_tags(doc: Mapping[str, Any]) -> set[str]:
    """Every tag pytest-bdd will turn into a mark: on the feature, its scenarios and their examples."""
    feature = doc["feature"]
    rules = [c["rule"] for c in feature["children"] if "rule" in c]
    scenarios = [c["scenario"] for parent in [feature, *rules] for c in parent["children"] if "scenario" in c]
    nodes = [feature, *rules, *scenarios] + [e for n in scenarios for e in n.get("examples", [])]
    return {t["name"].removeprefix("@") for n in nodes for t in n.get("tags", [])}


def _runnable(feature: Feature) -> list[tuple[str, Scenario]]:
    """(name in the feature file, IR scenario) for each scenario pytest-bdd runs: an outline runs
    once (pytest-bdd parametrizes its rows) and stands for its first row, whose steps and needs
    every row shares."""
    runnable: dict[str, Scenario] = {}
    for scenario in feature.scenarios:
        runnable.setdefault(scenario.outline or scenario.name, scenario)
    return list(runnable.items())


def _test_name(scenario_name: str, taken: set[str]) -> str:
    base = "test_" + (re.sub(r"\W+", "_", scenario_name).strip("_").lower() or "scenario")
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


def _line_maps(doc: Mapping[str, Any], feature: Feature) -> dict[str, dict[int, Location]]:
    """Per scenario name in the file pytest-bdd runs: line of each step → where the user wrote it."""
    def background_lines(children: list[dict[str, Any]]) -> list[int]:
        return [s["location"]["line"] for c in children if "background" in c for s in c["background"]["steps"]]

    children = doc["feature"]["children"]
    nodes: dict[str, tuple[Any, list[int]]] = {c["scenario"]["name"]: (c["scenario"], []) for c in children if "scenario" in c}
    for rule in (c["rule"] for c in children if "rule" in c):  # a rule's Background runs after the feature's
        rule_lines = background_lines(rule["children"])
        nodes.update({c["scenario"]["name"]: (c["scenario"], rule_lines) for c in rule["children"] if "scenario" in c})
    maps: dict[str, dict[int, Location]] = {}
    for name, scenario in _runnable(feature):
        node, rule_lines = nodes[name]
        lines = background_lines(children) + rule_lines + [s["location"]["line"] for s in node["steps"]]
        calls = feature.background + scenario.steps
        maps[name] = {line: call.location for line, call in zip(lines, calls, strict=True)}
    return maps
