"""`stepgraph run --nodes SELECTOR`: the catalog once per matching node of a multi-node twin, each
scenario bound to its node and its pods pinned there, nodes spread over xdist workers but each
node on one worker only; one results file and a trace column per node. A switch set on one node
turns exactly that node's column red."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from in_process_run import stepgraph_here

from stepgraph.dsl.nodes import node_of

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "scenarios" / "multi_dgd"
WORLD = """
name: three
nodes:
  - {name: n1}
  - {name: n2, faults: {nvml_no_permission: true}}
  - {name: n3}
  - {name: other, labels: {power-test/node: elsewhere}}
"""


def stepgraph_run_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                             *args: str) -> tuple[int, str, str]:
    """`stepgraph_run`'s command in this process (it runs pytest in its own process too, with one
    world and no workers) → exit code, stdout, stderr."""
    world = tmp_path / "three.yaml"
    world.write_text(WORLD)
    monkeypatch.chdir(ROOT)
    code = stepgraph_here(["run", str(CATALOG / "nvml_caps.feature"), str(CATALOG / "applied_limit_metric.yaml"),
                           "--world", str(world), *args, "--", "-q", "-p", "no:cacheprovider"])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def per_node(tmp_path_factory) -> tuple[subprocess.CompletedProcess, list[dict], str]:
    """The command in this process: it runs pytest in its own process too, whose pytest-xdist
    workers are processes of their own; a process for the command would add only an interpreter's
    start and its imports."""
    tmp = tmp_path_factory.mktemp("per-node")
    world = tmp / "three.yaml"
    world.write_text(WORLD)
    out, err = io.StringIO(), io.StringIO()
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = stepgraph_here(["run", str(CATALOG / "nvml_caps.feature"), str(CATALOG / "applied_limit_metric.yaml"),
                                   "--world", str(world), "--nodes", "power-test/node=target", "--workers", "2",
                                   "--reports", str(tmp / "r"), "--", "-q", "-p", "no:cacheprovider"])
    finally:
        os.chdir(cwd)
    done = subprocess.CompletedProcess(["stepgraph", "run"], code, out.getvalue(), err.getvalue())
    records = json.loads((tmp / "r" / "results.json").read_text())["scenarios"]
    return done, records, (tmp / "r" / "trace.md").read_text()


def test_each_matching_node_runs_every_scenario_and_only_the_broken_node_fails(per_node):
    done, records, _ = per_node
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    outcomes = defaultdict(dict)
    for r in records:
        outcomes[r["world"]][r["id"]] = r["outcome"]
    assert dict(outcomes) == {
        "three, node n1": {"NVML-CAPS": "passed", "B2": "passed"},
        "three, node n2": {"NVML-CAPS": "failed", "B2": "failed"},
        "three, node n3": {"NVML-CAPS": "passed", "B2": "passed"},
    }


def test_a_node_runs_on_one_worker_and_the_nodes_on_both(per_node):
    _, records, _ = per_node
    workers = defaultdict(set)
    for r in records:
        workers[r["fingerprint"]["node"]].add(r["worker"])
    assert all(len(w) == 1 for w in workers.values()), dict(workers)
    assert set().union(*workers.values()) == {"gw0", "gw1"}


def test_the_trace_has_one_column_per_node(per_node):
    _, _, trace = per_node
    header = next(line for line in trace.splitlines() if line.startswith("| id |"))
    assert header.count("twin / three, node n") == 3 and "node other" not in header


def test_a_selector_no_node_matches_stops_the_run_with_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    code, out, err = stepgraph_run_in_process(tmp_path, capsys, monkeypatch, "--nodes", "gpu=none", "--workers", "0")
    assert code == 2
    assert "no node of target 'twin' matches --nodes 'gpu=none' — check the labels" in out + err


def test_a_bad_workers_count_is_a_usage_error(tmp_path, capsys, monkeypatch):
    code, _, err = stepgraph_run_in_process(tmp_path, capsys, monkeypatch, "--nodes", "power-test/node=target",
                                            "--workers", "many")
    assert code == 2 and "--workers 'many' is not a number of processes" in err


@pytest.mark.parametrize("nodeid, node", [
    ("f.feature::test_x[n1]", "n1"),
    ("f.feature::test_x[350-325-gpu-node-12]", "gpu-node-12"),
    ("f.feature::test_x[gpu-node-1]", "gpu-node-1"),
    ("f.feature::test_x", None),
    ("f.feature::test_x[n9]", None),
])
def test_the_scheduler_reads_the_node_from_the_test_id(nodeid, node):
    assert node_of(nodeid, ["n1", "gpu-node-1", "gpu-node-12"]) == node


def test_the_live_target_lists_the_clusters_matching_nodes_without_a_test_node():
    from stepgraph.dsl import TargetConfigError
    from stepgraph.targets.live import LiveTarget
    from stepgraph.twin.world import parse_world
    from stepgraph.twin.world_install import build_twin

    with build_twin(parse_world(WORLD)) as twin:
        env = {"STEPGRAPH_LIVE": "1", "STEPGRAPH_NODES": "power-test/node=target", "KUBECONFIG": str(twin.kubeconfig_path)}
        target = LiveTarget(env=env)
        target.configure({})
        assert target.nodes("power-test/node=target") == ["n1", "n2", "n3"]
        assert target.nodes("power-test/node=elsewhere") == ["other"]
    with pytest.raises(TargetConfigError, match="opt in with STEPGRAPH_LIVE=1"):
        LiveTarget(env={}).nodes("a=b")
