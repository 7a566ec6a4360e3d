"""`stepgraph fleet run` (on your machine) and `stepgraph fleet node` (inside each runner pod).

    stepgraph fleet run --nodes SELECTOR --image IMAGE [PATH...] [--namespace NS] [--kubeconfig FILE]
        [--reports DIR] [--env KEY=VALUE]... [--schedule-timeout S] [--timeout S] [-- PYTEST ARGS]
    stepgraph fleet node [PATH...] [--reports DIR] [-- PYTEST ARGS]

`run` lists the nodes the selector matches, runs one Job per node (see `run.py`), and writes one
results file, Cucumber JSON, JUnit and the trace — a column per node, a node without results red
with its reason. Exit: 0 all green, 1 a node or scenario failed, 2 bad usage or configuration,
130 interrupted (the Jobs are deleted first). `node` runs the catalog with the live target
(in-cluster config, `TEST_NODE` from the downward API) and prints its results at the end of its log.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError

from stepgraph.dsl.reports import cucumber, junit, results, run_reports

from .results import bind_to_node, failed_node, framed
from .run import FleetRun, FleetSettings

DEFAULT_PATHS = ["scenarios/multi_dgd"]
VARIANT_NAMESPACES = {"target": "dynamo-power-test", "kaim": "kaim-dynamo-system"}


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} — see `{self.prog} --help`")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="stepgraph fleet", description="The catalog on every matching node, as Kubernetes Jobs.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="one Job per matching node; merged results and trace")
    run.add_argument("paths", nargs="*", metavar="PATH", help=f"scenario paths inside the image (default {DEFAULT_PATHS[0]})")
    run.add_argument("--nodes", required=True, metavar="SELECTOR", help="label selector of the nodes to test")
    run.add_argument("--image", required=True, help="the runner image (see Dockerfile)")
    run.add_argument("--namespace", help="the test namespace (default: that of STEPGRAPH_VARIANT, dynamo-power-test)")
    run.add_argument("--kubeconfig", help="default: $KUBECONFIG, else ~/.kube/config")
    run.add_argument("--reports", default="reports", metavar="DIR")
    run.add_argument("--design", action="append", default=[], metavar="DOC",
                     help="design doc(s) for the trace (default: the project's stepgraph_design_doc)")
    run.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                     help="environment for the runners, e.g. DCGM_HOSTENGINE_AVAILABLE=1 (repeatable)")
    run.add_argument("--service-account", metavar="NAME",
                     help="run the runners as this existing ServiceAccount and create no RBAC (yours to grant)")
    run.add_argument("--schedule-timeout", type=float, default=300.0, metavar="S",
                     help="a runner pod not scheduled by then fails its node (default 300)")
    run.add_argument("--timeout", type=float, default=3600.0, metavar="S", help="the whole run (default 3600)")
    node = sub.add_parser("node", help="(inside a runner pod) run the catalog live and print the results")
    node.add_argument("paths", nargs="*", metavar="PATH")
    node.add_argument("--reports", default=None, metavar="DIR")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    try:
        args = parser().parse_args(argv[:cut])
        passthrough = argv[cut + 1:]
        if args.command == "node":
            return node_main(args, passthrough)
        return run_main(args, passthrough)
    except KeyboardInterrupt:  # before anything was created (after, run_main says what it removed)
        print("stepgraph fleet: interrupted — removed nothing (none had been created yet)", file=sys.stderr)
        return 130
    except UsageError as exc:
        print(f"stepgraph fleet: {exc}", file=sys.stderr)
        return 2


# -- inside the runner pod -------------------------------------------------------------------
def node_main(args: argparse.Namespace, pytest_args: list[str]) -> int:
    """Run the catalog here (in this process: a runner pod holds one interpreter, not two) and
    print its results; the reports go to a fresh temporary folder, removed afterwards, unless
    `--reports` names one."""
    from stepgraph.dsl.cli import main as stepgraph_main

    with tempfile.TemporaryDirectory(prefix="stepgraph-fleet-") as tmp:
        reports = Path(args.reports or tmp)
        code = stepgraph_main(["run", *(args.paths or DEFAULT_PATHS), "--reports", str(reports),
                               "--", "--target", "live", *pytest_args])
        document = reports / "results.json"
        sys.stdout.flush()
        if document.is_file():
            sys.stdout.write(framed(results.load(document)))
        sys.stdout.flush()
    return code


# -- on the user's machine -------------------------------------------------------------------
def run_main(args: argparse.Namespace, pytest_args: list[str]) -> int:
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--env {item!r}: write KEY=VALUE")
        env[key] = value
    if args.schedule_timeout <= 0 or args.timeout <= 0:
        raise UsageError("--schedule-timeout and --timeout are seconds > 0")
    namespace = args.namespace or VARIANT_NAMESPACES.get(os.environ.get("STEPGRAPH_VARIANT", "target"), "dynamo-power-test")
    paths = args.paths or DEFAULT_PATHS
    design = [Path(d) for d in args.design] or _project_design()
    try:
        api = config.new_client_from_config(config_file=args.kubeconfig)
    except (ConfigException, OSError) as exc:
        print(f"stepgraph fleet: no Kubernetes credentials ({exc}) — set KUBECONFIG or --kubeconfig", file=sys.stderr)
        return 2
    try:
        nodes = _nodes(api, args.nodes)
    except (ApiException, OSError, HTTPError) as exc:
        print(f"stepgraph fleet: cannot list nodes -l {args.nodes!r}: {_why(exc)} — check the selector and KUBECONFIG",
              file=sys.stderr)
        return 2
    if not nodes:
        print(f"stepgraph fleet: no node matches --nodes {args.nodes!r} — check the labels", file=sys.stderr)
        return 2
    settings = FleetSettings(namespace=namespace, image=args.image, env=env,
                             run_args=[*paths, "--", *pytest_args] if pytest_args else list(paths),
                             schedule_timeout_s=args.schedule_timeout, timeout_s=args.timeout,
                             service_account=args.service_account)
    out = Path(args.reports)
    started_at, started = datetime.now(UTC), time.perf_counter()
    baseline = run_reports.keep_previous(out)
    fleet = FleetRun(api, settings, log=lambda line: print(line, flush=True))
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        outcomes = fleet.run(nodes)
    except KeyboardInterrupt:
        print(f"stepgraph fleet: interrupted — removed {_listed(fleet.cleaned)}", file=sys.stderr)
        return 130
    except ApiException as exc:
        print(f"stepgraph fleet: {_why(exc)} — check the namespace {namespace!r} exists and your rights there",
              file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"stepgraph fleet: cleaned up: removed {_listed(fleet.cleaned)}", flush=True)
    records: list[dict[str, Any]] = []
    for outcome in outcomes:
        if outcome.document is not None:
            records += bind_to_node(outcome.document, outcome.node)
        else:
            records += failed_node([Path(p) for p in paths], outcome.node, outcome.reason or "no result")
    document = results.assemble(records, started_at=started_at, duration_s=time.perf_counter() - started,
                                args=sys.argv[1:], collection_errors=[])
    out.mkdir(parents=True, exist_ok=True)
    results.write(document, out / "results.json")
    cucumber.write(document, out / "cucumber.json")
    junit.write(document, out / "junit.xml")
    code = run_reports.write_trace(out, design, baseline=baseline) if design else 0
    print(f"stepgraph fleet: {len(nodes)} node(s) → {out}/results.json, {out}/trace.md")
    failed = any(r["outcome"] in ("failed", "error") for r in records)
    return 1 if failed else code


def _nodes(api: client.ApiClient, selector: str) -> list[dict[str, str | None]]:
    found = client.CoreV1Api(api).list_node(label_selector=selector).items
    return [{"name": n.metadata.name, "hostname": (n.metadata.labels or {}).get("kubernetes.io/hostname")}
            for n in sorted(found, key=lambda n: n.metadata.name)]


def _project_design() -> list[Path]:
    path = Path("pyproject.toml")
    if not path.is_file():
        return []
    options = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("pytest", {}).get("ini_options", {})
    doc = options.get("stepgraph_design_doc")
    return [Path(doc)] if isinstance(doc, str) and doc else []


def _listed(cleaned: list[str]) -> str:
    return ", ".join(cleaned) if cleaned else "nothing (none had been created yet)"


def _why(exc: Exception) -> str:
    if isinstance(exc, ApiException):
        return f"{exc.status} {exc.reason}"
    return str(exc)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
