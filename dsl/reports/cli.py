"""`stepgraph trace`: design documents + results files → trace.md / trace.html / trace.json.

Exit codes: 0 the trace was written; 1 a declared expectation was not met; 2 bad input (an
unreadable file, a scenario claiming an id no document defines, …), reported as
`file:line:col: what is wrong — what to do`. The reports are still written when orphans are found.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stepgraph.dsl.reports import render
from stepgraph.dsl.reports.design import DesignDoc, parse_design_doc
from stepgraph.dsl.reports.errors import InputError
from stepgraph.dsl.reports.expectations import Expectation, load_expectations
from stepgraph.dsl.reports.lock import Lock, load_lock, write_lock
from stepgraph.dsl.reports.paths import from_base
from stepgraph.dsl.reports.results import load
from stepgraph.dsl.reports.trace import Inputs, build_trace, lock_entries

FORMATS = ("md", "html", "json")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stepgraph trace",
        description="Trace design-doc requirements to scenarios and their latest results.",
        epilog="Scenarios link to requirements with @design:<ID>[,<ID>…] tags and are named by @id:<ID>.",
    )
    parser.add_argument("--design", nargs="+", required=True, metavar="DOC", help="Markdown design documents")
    parser.add_argument("--results", nargs="+", required=True, metavar="FILE", help="results files (--stepgraph-results)")
    parser.add_argument("--format", action="append", metavar="FMT",
                        help="md, html, json (repeat or comma-separate; default: all three)")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for trace.md / trace.html / trace.json")
    parser.add_argument("--baseline", nargs="+", metavar="FILE", help="earlier results to diff against")
    parser.add_argument("--expect", metavar="FILE", help="expected outcomes per world (YAML)")
    parser.add_argument("--lock", metavar="FILE", help="review lock (JSON) recording the reviewed requirement hashes")
    parser.add_argument("--update-lock", action="store_true", help="accept every current link into --lock")
    parser.add_argument("--only", action="append", metavar="GLOB", help="count only these requirement ids (e.g. 'B*', '8.5.*')")
    parser.add_argument("--allow-orphans", action="store_true", help="do not exit 2 when scenarios claim unknown ids")
    parser.add_argument("--base", metavar="DIR", type=Path,
                        help="name the design documents and the expectations file from DIR (default: the working folder), "
                             "as the results name scenario files from the rootdir")
    return parser


def _formats(raw: list[str] | None, parser: argparse.ArgumentParser) -> list[str]:
    chosen = [f.strip() for item in raw or [",".join(FORMATS)] for f in item.split(",") if f.strip()]
    unknown = sorted(set(chosen) - set(FORMATS))
    if unknown:
        parser.error(f"unknown --format {', '.join(unknown)} (choose from {', '.join(FORMATS)})")
    return list(dict.fromkeys(chosen))


def _write(path: str | Path, write: Callable[[], None]) -> None:
    try:
        write()
    except OSError as exc:
        raise InputError(str(path), 1, f"cannot write: {exc.strerror or exc}",
                         "check that --out names a folder you can write to") from None


#: What a trace reads besides the results it traces: the documents, the review lock, the
#: expectations and the baseline results.
Early = tuple[list[DesignDoc], Lock | None, list[Expectation] | None, list[dict[str, Any]] | None]


def _read_before_results(args: argparse.Namespace) -> Early:
    base = args.base or Path.cwd()
    docs = [parse_design_doc(path, from_base(path, base)) for path in args.design]
    return (docs,
            load_lock(args.lock, docs) if args.lock and not args.update_lock else None,
            load_expectations(args.expect, from_base(args.expect, base)) if args.expect else None,
            [load(path) for path in args.baseline] if args.baseline else None)


def _identities(args: argparse.Namespace) -> tuple[tuple[int, int, int] | None, ...]:
    """Each file the early inputs come from, as (inode, size, mtime): a file written again differs."""
    def identity(path: str | Path) -> tuple[int, int, int] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns
    return tuple(identity(path) for path in [*args.design, args.lock, args.expect, *(args.baseline or [])] if path)


class ReadAhead:
    """A trace's early inputs read before its results exist (while `stepgraph run`'s worlds run):
    taken once, by a trace with the same arguments, and only while none of their files changed.
    A file that does not read is left for the trace to read again, and report."""

    def __init__(self, argv: list[str]) -> None:
        self._argv = list(argv)
        self._args = _parser().parse_args(argv)
        self._identities = _identities(self._args)
        try:
            self._early: Early | None = _read_before_results(self._args)
        except InputError:
            self._early = None
        if _identities(self._args) != self._identities:  # a file changed while it was read
            self._early = None

    def take(self, argv: list[str] | None) -> Early | None:
        early, self._early = self._early, None
        if early is None or argv != self._argv or _identities(self._args) != self._identities:
            return None
        return early


def main(argv: list[str] | None = None, *, ahead: ReadAhead | None = None) -> int:
    """`stepgraph trace`; `ahead`: what a ReadAhead of the same arguments read before the results."""
    parser = _parser()
    args = parser.parse_args(argv)
    formats = _formats(args.format, parser)
    if args.update_lock and not args.lock:
        parser.error("--update-lock needs --lock FILE")
    if args.base is not None and not args.base.is_dir():
        parser.error(f"--base {args.base}: not a folder — name the folder the report's paths are read from")
    try:
        early = ahead.take(argv) if ahead is not None else None
        docs, lock, expectations, baseline = early or _read_before_results(args)
        inputs = Inputs(docs=docs, runs=[load(path) for path in args.results], lock=lock,
                        expectations=expectations, baseline=baseline, only=args.only)
        trace = build_trace(inputs)
        if args.update_lock:
            _write(args.lock, lambda: write_lock(args.lock, lock_entries(trace), docs))
            trace = build_trace(dataclasses.replace(inputs, lock=lock_entries(trace)))
        out = Path(args.out)
        for fmt in formats:
            _write(out / f"trace.{fmt}", functools.partial(render.write, trace, fmt, out / f"trace.{fmt}"))
    except InputError as error:
        print(f"stepgraph trace: {error}", file=sys.stderr)
        return 2
    totals = trace["totals"]
    print(f"stepgraph trace: {totals['covered']}/{totals['requirements']} requirements covered "
          f"({totals['coverage_pct']}%), {totals['passing']} passing, {totals['suspect']} suspect → {out}")
    status = 0
    for orphan in trace["orphans"]:
        print(f"{orphan['where']}:1: scenario {orphan['scenario']!r} claims unknown requirement "
              f"{', '.join(orphan['ids'])} — fix the @design tag or add the requirement to a design document",
              file=sys.stderr)
    if trace["orphans"] and not args.allow_orphans:
        status = 2
    for exp in trace["expectations"]:
        if not exp["ok"]:
            print(f"{exp['where']}:1: expectation {exp['name']!r} not met: expected {exp['expected']}, got {exp['actual']}",
                  file=sys.stderr)
            status = status or 1
    return status


if __name__ == "__main__":
    sys.exit(main())
