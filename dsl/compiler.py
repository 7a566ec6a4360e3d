"""Scenario paths → compiled features: load (by suffix), bind, check; all errors of a file at once."""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .checks import check_feature, order_hazards
from .diagnostics import Diagnostic, Location
from .ir import Feature
from .load_gherkin import load_gherkin
from .registry import Registry
from .source import read_text

GHERKIN_SUFFIXES = (".feature",)
YAML_SUFFIXES = (".yaml", ".yml")
SCENARIO_SUFFIXES = GHERKIN_SUFFIXES + YAML_SUFFIXES


@dataclass
class CompiledFile:
    path: Path
    display: str
    feature: Feature | None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.feature is not None and not self.diagnostics


def display_path(path: Path) -> str:
    """A path under the working folder, relative to it (clickable, the same on every machine); others as given."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith(os.pardir) else relative


def compile_file(
    path: Path, registry: Registry, *, design_ids: Collection[str] | None = None, design_source: str = "", display: str | None = None
) -> CompiledFile:
    display = display or display_path(path)
    text, diags = read_text(path, display)
    if text is None or diags:
        return CompiledFile(path, display, None, sorted(diags))
    return compile_text(text, path, display, registry, design_ids=design_ids, design_source=design_source)


def compile_text(
    text: str, path: Path, display: str, registry: Registry, *, design_ids: Collection[str] | None = None, design_source: str = ""
) -> CompiledFile:
    if path.suffix in YAML_SUFFIXES:
        from .load_yaml import load_yaml  # the YAML parser and its schema: only YAML files need them

        loader = load_yaml
    else:
        loader = load_gherkin
    feature, diags = loader(text, display, registry)
    if feature is not None:
        # A partial IR (steps that did not bind are missing) is still checked, so a file's errors
        # come at once; only data flow waits for a clean binding, to avoid echoing missing steps.
        dataflow = not any(d.check == "binding" for d in diags)
        diags = diags + check_feature(feature, registry, design_ids, design_source, dataflow=dataflow)
    return CompiledFile(path, display, feature, sorted(set(diags)))


def scenario_files(paths: Iterable[Path]) -> tuple[list[Path], list[Diagnostic]]:
    """Files named on the command line, and scenario files found under folders."""
    files, diags = [], []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in SCENARIO_SUFFIXES and p.is_file())
        elif path.exists() and path.suffix not in SCENARIO_SUFFIXES:
            diags.append(
                Diagnostic(
                    Location(display_path(path)), "not a scenario file", f"scenario files end in {', '.join(SCENARIO_SUFFIXES)}", "syntax"
                )
            )
        else:
            files.append(path)  # a missing path gets its diagnostic from compile_file
    return files, diags


def compile_paths(
    paths: Iterable[Path], registry: Registry, *, design_ids: Collection[str] | None = None, design_source: str = ""
) -> tuple[list[CompiledFile], list[Diagnostic]]:
    """Compile every scenario file (in run order: sorted paths); cross-file problems (a scenario id
    used twice, ordering hazards) come back separately."""
    files, diags = scenario_files(paths)
    compiled = [compile_file(p, registry, design_ids=design_ids, design_source=design_source) for p in files]
    first_seen: dict[str, Location] = {}
    for cf in compiled:
        if cf.feature is None:
            continue
        for scenario in cf.feature.scenarios:
            sid = cf.feature.scenario_id(scenario)
            if sid is None:
                continue
            if sid in first_seen and first_seen[sid].file != scenario.location.file:
                diags.append(
                    Diagnostic(
                        scenario.location,
                        f"scenario id {sid!r} is also used at {first_seen[sid]}",
                        "ids name one scenario each",
                        "duplicates",
                    )
                )
            first_seen.setdefault(sid, scenario.location)
    diags += order_hazards((cf.feature, s) for cf in compiled if cf.feature is not None for s in cf.feature.scenarios)
    return compiled, diags
