"""The `stepgraph` command: argv → lint / compile / graph / convert / steps / schema / run, plus
sub-commands from the `stepgraph.commands` entry-point group. Usage errors: one line, exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from .compiler import CompiledFile, compile_file, compile_paths, display_path
from .entry_points import in_group
from .registry import REGISTRY, Registry, StepDeclarationError
from .reports.errors import InputError
from .target import TargetConfigError, load_target

# What only some commands need (graphs, rendering, the catalog, the schema) is imported by them:
# `stepgraph lint` is the command run most often, on one file at a time.

COMMANDS_GROUP = "stepgraph.commands"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command line; printed as one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} — see `{self.prog} --help`")


def _registry() -> Registry:
    REGISTRY.load_entry_points()
    return REGISTRY


def _extra_commands() -> dict[str, Callable[[], Callable[[list[str]], int]]]:
    return {ep.name: ep.load for ep in in_group(COMMANDS_GROUP)}  # loaded only when used


def build_parser(extra: list[str]) -> argparse.ArgumentParser:
    parser = _Parser(prog="stepgraph", description="Scenarios in Gherkin or YAML → checked step graphs → pytest-bdd runs.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    lint = sub.add_parser("lint", help="static checks; exit 0 clean, 2 on errors")
    lint.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="default: stepgraph_paths of ./pyproject.toml")
    lint.add_argument(
        "--design-doc", type=Path, help="Markdown doc whose ids @design tags must name (check 9); default: stepgraph_design_doc"
    )
    lint.add_argument("--target", help="also say which scenarios this target would skip")
    comp = sub.add_parser("compile", help="write the .feature and graph JSON of each scenario file")
    comp.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    comp.add_argument("--out", type=Path, required=True, metavar="DIR")
    comp.add_argument("--design-doc", type=Path)
    gr = sub.add_parser("graph", help="the step graph of a scenario file")
    gr.add_argument("path", type=Path, metavar="SCENARIO")
    gr.add_argument("--format", choices=("mermaid", "dot", "json"), default="mermaid")
    gr.add_argument("--scenario", help="only the scenario with this name or id")
    conv = sub.add_parser("convert", help="Gherkin ↔ YAML (the IR stays identical)")
    conv.add_argument("path", type=Path, metavar="FILE")
    conv.add_argument("--to", choices=("yaml", "gherkin"), required=True)
    conv.add_argument("--out", type=Path, help="write here instead of stdout")
    sub.add_parser("steps", help="the catalog of registered steps (Markdown)")
    sch = sub.add_parser("schema", help="the JSON Schema of the YAML format")
    sch.add_argument("--out", type=Path)
    run = sub.add_parser("run", help="run scenarios with pytest and the gherkin reporter; other options go to pytest")
    run.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    run.add_argument("--reports", metavar="DIR", help="write the reports here (the reports plugin's --stepgraph-reports)")
    run.add_argument("--world", action="append", default=[], metavar="NAME|FILE",
                     help="run in this target world (--target-option world=…); repeated: once per world, one merged "
                          "results file and trace under --reports")
    run.add_argument("--jobs", type=int, default=2, metavar="N", help="with several --world: how many run at once (default 2)")
    run.add_argument("--nodes", metavar="SELECTOR",
                     help="run the scenarios once per node matching this label selector, nodes in parallel")
    run.add_argument("--workers", metavar="N", default="auto",
                     help="with --nodes: parallel worker processes (default auto: one per CPU; 0: none)")
    for name in extra:
        sub.add_parser(name, help=f"(from {COMMANDS_GROUP})", add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = _extra_commands()
    try:
        if argv and argv[0] in extra and argv[0] not in _BUILTIN:
            return int(extra[argv[0]]()(argv[1:]) or 0)
        parser = build_parser(sorted(set(extra) - set(_BUILTIN)))
        if argv and argv[0] == "run":
            cut = argv.index("--") if "--" in argv else len(argv)
            args, passthrough = parser.parse_known_args(argv[:cut])
            passthrough += argv[cut + 1 :]
        else:
            args, passthrough = parser.parse_args(argv), []
        return _BUILTIN[args.command](args, passthrough)
    except UsageError as exc:
        print(f"stepgraph: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (TargetConfigError, StepDeclarationError) as exc:
        print(f"stepgraph: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _design(args: argparse.Namespace) -> tuple[set[str] | None, str]:
    doc = getattr(args, "design_doc", None)
    if doc is None:
        return None, ""
    if not doc.is_file():
        raise UsageError(f"design doc {str(doc)!r} does not exist")
    from .reports.design import requirement_ids

    try:
        return requirement_ids(doc), display_path(doc)
    except InputError as err:
        raise UsageError(str(err)) from None


def _report(files: list[CompiledFile], extra: list) -> bool:
    diags = [d for f in files for d in f.diagnostics] + extra
    for d in sorted(diags):
        print(d)
    return not diags


def _project_settings() -> dict[str, object]:
    """The stepgraph ini options of ./pyproject.toml ([tool.pytest.ini_options]), so that a bare
    `stepgraph lint` checks what `pytest` would collect, against the same design doc."""
    import tomllib

    path = Path("pyproject.toml")
    if not path.is_file():
        return {}
    try:
        options = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("pytest", {}).get("ini_options", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"pyproject.toml: {exc}") from None
    return {k: v for k, v in options.items() if k.startswith("stepgraph_")}


def cmd_lint(args: argparse.Namespace, _: list[str]) -> int:
    settings = _project_settings() if not args.paths or args.design_doc is None else {}
    if not args.paths:
        paths = settings.get("stepgraph_paths") or []
        if not paths:
            raise UsageError("no PATH given and no stepgraph_paths in ./pyproject.toml — pass scenario files or folders")
        args.paths = [Path(p) for p in (paths if isinstance(paths, list) else str(paths).split())]
    if args.design_doc is None and settings.get("stepgraph_design_doc"):
        args.design_doc = Path(str(settings["stepgraph_design_doc"]))
    design_ids, source = _design(args)
    target = load_target(args.target) if args.target else None
    files, extra = compile_paths(args.paths, _registry(), design_ids=design_ids, design_source=source)
    ok = _report(files, extra)
    scenarios = sum(len(f.feature.scenarios) for f in files if f.feature)
    if target is not None:
        for feature in (f.feature for f in files if f.feature):
            for s in feature.scenarios:
                missing = sorted(feature.needs(s) - set(target.capabilities))
                if missing:
                    print(f"{s.location}: note: target {target.name!r} would skip {s.name!r} (lacks {', '.join(missing)})")
    status = "ok" if ok else "errors"
    print(f"stepgraph lint: {len(files)} file(s), {scenarios} scenario(s): {status}", file=sys.stderr)
    return EXIT_OK if ok else EXIT_USAGE


def cmd_compile(args: argparse.Namespace, _: list[str]) -> int:
    from . import graph as graphs
    from .render import to_gherkin

    design_ids, source = _design(args)
    files, extra = compile_paths(args.paths, _registry(), design_ids=design_ids, design_source=source)
    if not _report(files, extra):
        return EXIT_USAGE
    args.out.mkdir(parents=True, exist_ok=True)
    for f in files:
        assert f.feature is not None
        stem = args.out / _inside(f.display)
        stem.parent.mkdir(parents=True, exist_ok=True)
        tags = (lambda s, d=f.display: [f"source:{d}:{s.location.line}"]) if f.feature.syntax == "yaml" else None
        Path(f"{stem}.feature").write_text(to_gherkin(f.feature, tags), encoding="utf-8")
        Path(f"{stem}.graph.json").write_text(graphs.to_json_text(graphs.graphs(f.feature)), encoding="utf-8")
    print(f"stepgraph compile: {len(files)} file(s) → {args.out}", file=sys.stderr)
    return EXIT_OK


def _inside(display: str) -> Path:
    """A scenario's place under --out: its path as shown, made relative (an absolute path loses its
    root, `..` becomes `_`), so nothing is written outside the folder asked for."""
    parts = Path(display).parts
    return Path(*("_" if part == ".." else part for part in parts if part != Path(display).anchor))


def _one(path: Path) -> CompiledFile:
    compiled = compile_file(path, _registry())
    if not compiled.ok:
        for d in compiled.diagnostics:
            print(d, file=sys.stderr)
    return compiled


def cmd_graph(args: argparse.Namespace, _: list[str]) -> int:
    from . import graph as graphs

    compiled = _one(args.path)
    if not compiled.ok or compiled.feature is None:
        return EXIT_USAGE
    gs = graphs.graphs(compiled.feature)
    if args.scenario:
        gs = [g for g in gs if args.scenario in (g.scenario, g.id)]
        if not gs:
            raise UsageError(f"no scenario named {args.scenario!r} in {compiled.display}")
    render = {"mermaid": graphs.to_mermaid, "dot": graphs.to_dot, "json": graphs.to_json_text}[args.format]
    sys.stdout.write(render(gs))
    return EXIT_OK


def cmd_convert(args: argparse.Namespace, _: list[str]) -> int:
    from .render import RenderError, to_gherkin, to_yaml

    compiled = _one(args.path)
    if not compiled.ok or compiled.feature is None:
        return EXIT_USAGE
    try:
        text = to_yaml(compiled.feature) if args.to == "yaml" else to_gherkin(compiled.feature)
    except RenderError as exc:
        print(f"{exc} — keep this scenario in YAML", file=sys.stderr)
        return EXIT_USAGE
    _emit(text, args.out)
    return EXIT_OK


def _emit(text: str, out: Path | None) -> None:
    """A command's output: to the file given with --out, else to stdout."""
    if out:
        out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def cmd_steps(args: argparse.Namespace, _: list[str]) -> int:
    from .catalog import steps_markdown

    sys.stdout.write(steps_markdown(_registry()))
    return EXIT_OK


def cmd_schema(args: argparse.Namespace, _: list[str]) -> int:
    from .schema import dumps, scenario_schema

    text = dumps(scenario_schema(_registry()))
    _emit(text, args.out)
    return EXIT_OK


def cmd_run(args: argparse.Namespace, passthrough: list[str]) -> int:
    pytest_args = [str(p) for p in args.paths]
    missing = [p for p in args.paths if not p.exists()]
    if missing:
        raise UsageError(f"no such path: {missing[0]}")
    if args.paths:
        # absolute: pytest takes an -o path from the rootdir, the command line from the working folder
        pytest_args += ["-o", "stepgraph_paths=" + " ".join(str(p.absolute()) for p in args.paths)]
    if "--gherkin-terminal-reporter" not in passthrough:
        passthrough = [*passthrough, "--gherkin-terminal-reporter", "-v"]
    if len(args.world) > 1:
        if args.nodes:
            raise UsageError("--nodes runs one world — give one --world")
        return _run_worlds(args, pytest_args, passthrough)
    import pytest  # here: several worlds run pytest in processes of their own, not in this one

    if args.world:
        pytest_args += ["--target-option", f"world={args.world[0]}"]
    if args.reports:
        pytest_args.append(f"--stepgraph-reports={args.reports}")
    if args.nodes:
        pytest_args += per_node_args(args.nodes, args.workers)
    return int(pytest.main(pytest_args + passthrough))


def per_node_args(selector: str, workers: str) -> list[str]:
    """pytest arguments of a per-node run: the selector, and xdist workers that take whole nodes
    (`--dist loadgroup` over the per-node groups), so no two scenarios share a node at once."""
    from .nodes import NODES_ENV  # with pytest: only a run needs it

    if workers != "auto" and not (workers.isdigit() and int(workers) >= 0):
        raise UsageError(f"--workers {workers!r} is not a number of processes — use auto, 0 or a positive number")
    os.environ[NODES_ENV] = selector  # the targets read it too: a per-node live run needs no TEST_NODE
    argv = [f"--stepgraph-nodes={selector}"]
    if workers != "0":
        argv += ["-n", workers, "--dist", "loadgroup"]
    return argv


def _run_worlds(args: argparse.Namespace, pytest_args: list[str], passthrough: list[str]) -> int:
    from .run_worlds import TraceSettings, run_worlds

    if not args.reports:
        raise UsageError("several --world need --reports DIR — the merged results and the trace are written there")
    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: give at least 1")
    settings = _project_settings()
    design = _as_list(settings.get("stepgraph_trace_design")) or _as_list(settings.get("stepgraph_design_doc"))
    expect, lock = _as_list(settings.get("stepgraph_trace_expect")), _as_list(settings.get("stepgraph_trace_lock"))
    trace = TraceSettings(design=[Path(d) for d in design], expect=Path(expect[0]) if expect else None,
                          lock=Path(lock[0]) if lock else None)
    return run_worlds(args.world, pytest_args, passthrough, Path(args.reports), trace, jobs=args.jobs)


def _as_list(value: object) -> list[str]:
    """An ini value as pyproject.toml gives it: absent, one string or a list of them."""
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value] if isinstance(value, list) else []


_BUILTIN: dict[str, Callable[[argparse.Namespace, list[str]], int]] = {
    "lint": cmd_lint,
    "compile": cmd_compile,
    "graph": cmd_graph,
    "convert": cmd_convert,
    "steps": cmd_steps,
    "schema": cmd_schema,
    "run": cmd_run,
}


if __name__ == "__main__":
    sys.exit(main())
