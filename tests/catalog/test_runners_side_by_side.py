"""Two live runs side by side on one cluster, on two nodes, as a fleet's runners are: each in a
namespace of its own, so the catalog's fixed pod names never meet and neither run takes the
other's objects for leftovers. The agent and hostengine stay where they are installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from in_process_run import stepgraph_here
from kubernetes import client

from stepgraph.steps._cluster import RUN_LABEL
from stepgraph.twin.world import parse_world
from stepgraph.twin.world_install import build_twin

ROOT = Path(__file__).resolve().parents[2]
FEATURE = ROOT / "scenarios" / "multi_dgd" / "nvml_caps.feature"
SYSTEM_NS = "dynamo-power-test"


@pytest.fixture
def twin():
    # The live target waits on the real clock; the twin runs ten times faster so agent ticks are short.
    world = parse_world("timing: {pod_startup_seconds: 0.5}\nnodes: [{name: n1}, {name: n2}]")
    with build_twin(world, clock="scaled:10") as t:
        yield t


def _live_env(twin, node: str, namespace: str, reports: Path) -> dict[str, str]:
    # A temp folder of its own: a run removes the temp folders of killed runs it finds there, and
    # the machine's /tmp may hold those of other tests (a SIGKILL test) or other checkouts' runs.
    tmp = reports / "tmp"
    tmp.mkdir(parents=True)
    return {"STEPGRAPH_LIVE": "1", "TEST_NODE": node, "STEPGRAPH_PIN_NODE": "1", "KUBECONFIG": str(twin.kubeconfig_path),
            "STEPGRAPH_RUN_NAMESPACE": namespace, "TMPDIR": str(tmp)}


def _run_args(reports: Path) -> list[str]:
    return ["run", str(FEATURE), "--reports", str(reports), "--", "--target", "live", "-q", "-p", "no:cacheprovider"]


def _live_run(twin, node: str, namespace: str, reports: Path) -> subprocess.Popen:
    env = {**os.environ, **_live_env(twin, node, namespace, reports)}
    return subprocess.Popen([sys.executable, "-m", "stepgraph.dsl.cli", *_run_args(reports)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_runs_on_two_nodes_keep_to_their_own_namespaces(twin, tmp_path):
    core = client.CoreV1Api(twin.api_client())
    for ns in ("run-n1", "run-n2"):
        core.create_namespace({"metadata": {"name": ns}})
    created: dict[str, set[str]] = {}  # namespace → the runs whose pods were created there
    deleted_by_other: list[str] = []

    def watch(event, pod):
        md = pod["metadata"]
        run = (md.get("labels") or {}).get(RUN_LABEL)
        if run and event == "ADDED":
            created.setdefault(md["namespace"], set()).add(run)
        if run and event == "DELETED" and created.get(md["namespace"]) != {run}:
            deleted_by_other.append(f"{md['namespace']}/{md['name']}")

    twin.store.subscribe("pods", watch)
    runs = {node: _live_run(twin, node, f"run-{node}", tmp_path / node) for node in ("n1", "n2")}
    outputs = {node: proc.communicate(timeout=600)[0] for node, proc in runs.items()}
    for node, proc in runs.items():
        assert proc.returncode == 0, outputs[node][-3000:]
        summary = json.loads((tmp_path / node / "results.json").read_text())["summary"]
        assert summary["passed"] == summary["total"] == 1, outputs[node][-3000:]
        assert "removed" not in outputs[node].splitlines()[-1], outputs[node][-3000:]  # no other run's leftovers
    # Each namespace held the pods of exactly one run, the test namespace none, and both are empty again.
    assert {ns: len(runs) for ns, runs in created.items()} == {"run-n1": 1, "run-n2": 1}
    assert created["run-n1"] != created["run-n2"] and deleted_by_other == []
    for ns in ("run-n1", "run-n2"):
        assert core.list_namespaced_pod(ns).items == []
    agents = core.list_namespaced_pod(SYSTEM_NS, label_selector="app.kubernetes.io/component=power-agent").items
    assert sorted(p.spec.node_name for p in agents) == ["n1", "n2"]


def test_a_run_namespace_that_does_not_exist_is_one_line_and_exit_2(twin, tmp_path, capsys, monkeypatch):
    # The command in this process: with one world and no workers it runs pytest in its own process
    # too, and this run ends when the live target configures, before any scenario, so a process
    # of its own would add only an interpreter's start and its imports.
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(tempfile, "tempdir", None)  # so the run reads TMPDIR, as its own process would
    code = stepgraph_here(_run_args(tmp_path / "r"), env=_live_env(twin, "n1", "nowhere", tmp_path / "r"))
    out = capsys.readouterr()
    assert code == 2, (out.out + out.err)[-2000:]
    assert "STEPGRAPH_RUN_NAMESPACE='nowhere' is not a namespace of this cluster — create it" in out.out + out.err
