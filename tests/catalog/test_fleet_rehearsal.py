"""`stepgraph fleet run` rehearsed end to end on a multi-node twin: every runner pod runs stepgraph
itself as a real process (the runner image served by the twin's process containers), with its
in-cluster config and the RBAC the run created; one node is broken by a fault switch on that node
only, and exactly that node's column is red. Nothing of the run is left afterwards.

Two nodes, one broken, prove it: each runner pod is a process of its own on its own node, so a
third would only repeat the green one (its runner costs a stepgraph process of its own, ~3 CPU-s)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from kubernetes import client

from stepgraph.dsl.reports import results as results_file
from stepgraph.targets.fleet import objects
from stepgraph.targets.fleet.cli import main as fleet_main
from stepgraph.targets.fleet.rehearsal import RUNNER_IMAGE, serve_runner_image
from stepgraph.twin.world import parse_world
from stepgraph.twin.world_install import build_twin

ROOT = Path(__file__).resolve().parents[2]
NS = "dynamo-power-test"
WORLD = """
name: rehearsal
timing: {pod_startup_seconds: 0.5}
nodes:
  - {name: n1}
  - {name: n2, faults: {nvml_no_permission: true}}
"""


@pytest.fixture
def twin():
    with build_twin(parse_world(WORLD), clock="scaled:20") as t:
        serve_runner_image(t, ROOT)
        yield t


def test_runner_pods_run_stepgraph_and_only_the_broken_node_is_red(twin, tmp_path, capsys):
    started: dict[str, str] = {}  # runner pod → the node it ran on, once its container was running

    def watch(_event, pod):
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        if objects.RUN_LABEL in (pod["metadata"].get("labels") or {}) and any("running" in (s.get("state") or {})
                                                                              for s in statuses):
            started[pod["metadata"]["name"]] = pod["spec"]["nodeName"]

    twin.store.subscribe("pods", watch)
    code = fleet_main(["run", "scenarios/multi_dgd/nvml_caps.feature", "scenarios/multi_dgd/applied_limit_metric.yaml",
                       "--nodes", "power-test/node=target", "--image", f"{RUNNER_IMAGE}:rehearsal",
                       "--reports", str(tmp_path), "--kubeconfig", str(twin.kubeconfig_path),
                       "--design", str(ROOT / "docs/design/multi-tenant-test-plan.md"),
                       "--schedule-timeout", "60", "--timeout", "600", "--", "-q", "-p", "no:cacheprovider"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert sorted(started.values()) == ["n1", "n2"], out
    records = results_file.load(tmp_path / "results.json")["scenarios"]
    outcomes: dict[str, dict[str, str]] = defaultdict(dict)
    for r in records:
        outcomes[r["world"]][r["id"]] = r["outcome"]
        assert r["target"] == "live"  # the runner's own run, not a stand-in record
    assert dict(outcomes) == {
        "node n1": {"NVML-CAPS": "passed", "B2": "passed"},
        "node n2": {"NVML-CAPS": "failed", "B2": "failed"},
    }, out
    assert "node n1: 2 passed" in out and "node n2: 2 failed" in out
    trace = (tmp_path / "trace.md").read_text()
    assert all(f"node {n}" in trace for n in ("n1", "n2"))
    # Nothing left: no Job, pod, runner namespace, RBAC object or process.
    api = twin.api_client()
    assert client.BatchV1Api(api).list_namespaced_job(NS).items == []
    assert client.CoreV1Api(api).list_pod_for_all_namespaces(label_selector=objects.RUN_LABEL).items == []
    assert client.CoreV1Api(api).list_namespace(label_selector=objects.RUN_LABEL).items == []
    assert client.RbacAuthorizationV1Api(api).list_cluster_role(label_selector=objects.RUN_LABEL).items == []
    assert twin.processes.children() == []


def test_a_runner_that_exits_on_a_configuration_error_is_red_with_its_line(twin, tmp_path, capsys):
    code = fleet_main(["run", "scenarios/multi_dgd/nvml_caps.feature", "--nodes", "kubernetes.io/hostname=n1",
                       "--image", f"{RUNNER_IMAGE}:rehearsal", "--env", "STEPGRAPH_VARIANT=nowhere",
                       "--reports", str(tmp_path), "--kubeconfig", str(twin.kubeconfig_path),
                       "--design", str(ROOT / "docs/design/multi-tenant-test-plan.md"),
                       "--schedule-timeout", "60", "--timeout", "300", "--", "-q", "-p", "no:cacheprovider"])
    out = capsys.readouterr().out
    assert code == 1, out
    [record] = results_file.load(tmp_path / "results.json")["scenarios"]
    assert record["outcome"] == "error" and record["world"] == "node n1"
    assert record["reason"].startswith("node n1: runner pod failed with no failed scenario (exit 2"), record["reason"]
    assert "STEPGRAPH_VARIANT='nowhere'" in record["reason"]
