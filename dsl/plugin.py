"""The pytest plugin: scenario files under `stepgraph_paths` → pytest-bdd scenarios on a target.

Gherkin files run as written; YAML files are rendered to generated `.feature` files (a temporary
folder, removed at the end) with a `@source:` tag pointing at the YAML. Every declared step is
registered with pytest-bdd from its declaration. Files are compiled first, so undefined,
ambiguous and ill-typed steps are collection errors with `file:line:col` lines. Scenarios whose
needs the target lacks are skipped before any setup. A run without scenario paths is untouched.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gherkin.parser import Parser
from pytest_bdd import scenario as bdd_scenario
from pytest_bdd import step as bdd_step
from pytest_bdd.parsers import StepParser

from .binder import make_call
from .bindings import Bindings
from .compiler import SCENARIO_SUFFIXES, YAML_SUFFIXES, compile_file
from .context import StepContext
from .design_ids import design_ids_from_file
from .diagnostics import Location
from .execute import execute_call
from .finalizers import FinalizerStack
from .ir import Feature, Scenario, StepCall
from .phrases import BIND_FIELD
from .registry import REGISTRY, Registry, StepDecl
from .render import to_gherkin
from .runinfo import RUN_INFO, RunInfo, ScenarioInfo, run_info
from .target import Target, TargetConfigError, TargetSession, default_target_name, load_target

STEP_LOCATION = pytest.StashKey[Location]()
GENERATED_DIR = pytest.StashKey[Path]()
TAG_KINDS = {
    "id": "requirement id, e.g. @id:B5",
    "design": "design-doc id, e.g. @design:8.5.7",
    "needs": "capability, e.g. @needs:nvml",
    "source": "the YAML file and line a generated scenario comes from",
}


def pytest_addoption(parser: pytest.Parser) -> None:
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


def pytest_configure(config: pytest.Config) -> None:
    info = run_info(config)
    for kind, meaning in TAG_KINDS.items():
        config.addinivalue_line("markers", f"{kind}: stepgraph tag kind — {meaning}; select with -m '{kind}:VALUE'")
    doc = config.getini("stepgraph_design_doc")
    if doc:
        path = Path(config.rootpath, doc)
        if not path.is_file():
            pytest.exit(f"stepgraph: design doc {doc!r} (ini stepgraph_design_doc) does not exist — fix the path", returncode=2)
        info.design_ids, info.design_source = design_ids_from_file(path), doc


def pytest_unconfigure(config: pytest.Config) -> None:
    generated = config.stash.get(GENERATED_DIR, None)
    if generated is not None:
        shutil.rmtree(generated, ignore_errors=True)


def _is_scenario_path(config: pytest.Config, file_path: Path) -> bool:
    if file_path.suffix not in SCENARIO_SUFFIXES:
        return False
    resolved = file_path.resolve()
    return any(resolved == root.resolve() or resolved.is_relative_to(root.resolve()) for root in config.getini("stepgraph_paths"))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if _is_scenario_path(parent.config, file_path):
        return ScenarioModule.from_parent(parent, path=file_path)
    return None


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
        registry = _registry()
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
        is_yaml = self.path.suffix in YAML_SUFFIXES
        feature_file = self._render_yaml(feature, compiled.display) if is_yaml else self.path
        line_maps = _line_maps(feature_file, feature, compiled.display)
        module = types.ModuleType(self.path.stem)
        module.__file__ = str(self.path)
        _register_steps(module.__dict__, registry, str(feature_file))
        for tag in {t for s in feature.scenarios for t in _scenario_tags(feature, s, compiled.display, self.path)}:
            register_tag_marker(config, tag)
        names: set[str] = set()
        for scenario in feature.scenarios:
            wrapper = bdd_scenario(str(feature_file), scenario.name, features_base_dir=str(feature_file.parent))(_noop)
            name = _test_name(scenario, names)
            module.__dict__[name] = wrapper
            info.scenarios[(str(feature_file), scenario.name)] = ScenarioInfo(
                feature=feature,
                scenario=scenario,
                source=compiled.display,
                feature_file=str(feature_file),
                line_map=line_maps.get(scenario.name, {}),
            )
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
            if isinstance(item, pytest.Function):
                item.stash[_ITEM_SCENARIO] = _scenario_of(item, self.config.stash[RUN_INFO])
        return items


_ITEM_SCENARIO = pytest.StashKey["ScenarioInfo | None"]()


def _noop() -> None:
    """A stepgraph scenario; its steps are in the scenario file."""


def _scenario_of(item: pytest.Function, info: RunInfo) -> ScenarioInfo | None:
    for scenario_info in info.scenarios.values():
        if item.obj.__doc__ == f"{scenario_info.feature_file}: {scenario_info.scenario.name}":
            return scenario_info
    return None


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


class DeclParser(StepParser):
    """A pytest-bdd step parser backed by one step declaration."""

    def __init__(self, decl: StepDecl, registry: Registry) -> None:
        super().__init__(decl.phrase.text)
        self.decl = decl
        self.registry = registry

    def _match(self, text: str) -> Any:
        for m in self.registry.match(text):
            if m.decl is self.decl:
                return m
        return None

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


def _register_steps(namespace: dict[str, Any], registry: Registry, filename: str) -> None:
    """Register every declaration as a pytest-bdd step definition in `namespace`.

    pytest-bdd's decorators put the step fixture into their caller's module namespace, so the
    decoration runs as module-level code of `namespace`."""
    namespace["_stepgraph_defs"] = [(DeclParser(decl, registry), _step_function(decl)) for decl in registry]
    namespace["_stepgraph_step"] = bdd_step
    code = compile("for _p, _f in _stepgraph_defs:\n    _stepgraph_step(_p)(_f)\n", filename, "exec")
    exec(code, namespace)


def _step_function(decl: StepDecl) -> Any:
    def step_function(sg_call: StepCall, stepgraph_scenario: ScenarioRuntime, request: pytest.FixtureRequest) -> Any:
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


@pytest.hookimpl(tryfirst=True)
def pytest_bdd_before_step(request: pytest.FixtureRequest, feature: Any, scenario: Any, step: Any, step_func: Any) -> None:
    info = request.config.stash.get(RUN_INFO, None)
    scenario_info = info.scenario(feature.filename, scenario.name) if info else None
    if scenario_info is not None:
        request.node.stash[STEP_LOCATION] = scenario_info.location_of(step.line_number)


def _target_options(config: pytest.Config) -> dict[str, str]:
    options = {}
    for item in config.getoption("stepgraph_target_options"):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise TargetConfigError(f"--target-option {item!r}: write KEY=VALUE")
        options[key] = value
    return options


def _ensure_target(config: pytest.Config) -> Target:
    info = config.stash[RUN_INFO]
    if info.target is None:
        name = config.getoption("stepgraph_target") or default_target_name()
        try:
            info.target = load_target(name)
            # A target whose capabilities depend on its options (the twin's world) reads them here,
            # before collection gates scenarios on those capabilities.
            configure = getattr(info.target, "configure", None)
            if configure is not None:
                configure(_target_options(config))
        except TargetConfigError as exc:
            pytest.exit(f"stepgraph: {exc}", returncode=2)
        info.target_name = name
    return info.target


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [(item, item.stash.get(_ITEM_SCENARIO, None)) for item in items]
    ours = [(item, s) for item, s in ours if s is not None]
    if not ours:
        return
    target = _ensure_target(config)
    for item, scenario_info in ours:
        missing = sorted(scenario_info.needs - set(target.capabilities))
        if missing:
            item.add_marker(pytest.mark.skip(reason=f"target {target.name!r} lacks {', '.join(missing)}"))


@pytest.fixture(scope="session")
def stepgraph_session(pytestconfig: pytest.Config) -> Iterator[TargetSession]:
    """The target session, started once for the run."""
    info = pytestconfig.stash[RUN_INFO]
    target = _ensure_target(pytestconfig)
    try:
        info.session = target.start(_target_options(pytestconfig))
    except TargetConfigError as exc:
        pytest.exit(f"stepgraph: target {target.name!r}: {exc}", returncode=2)
    try:
        yield info.session
    finally:
        target.stop(info.session)


@pytest.fixture(scope="session")
def stepgraph_cache(stepgraph_session: TargetSession) -> dict[str, Any]:
    return {}


@pytest.fixture
def stepgraph_scenario(stepgraph_session: TargetSession, stepgraph_cache: dict[str, Any]) -> Iterator[ScenarioRuntime]:
    """Bindings and finalizers of one scenario; the finalizers run at its teardown, always."""
    runtime = ScenarioRuntime(stepgraph_session, stepgraph_cache)
    try:
        yield runtime
    finally:
        runtime.finalizers.run()
