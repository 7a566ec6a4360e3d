"""`stepgraph fleet run`: the objects it creates are valid Kubernetes and pin each runner to its
node; results travel back through the runner's log; a node without results becomes red records
naming the reason; bad input and API refusals are one line with exit 2 and leave nothing behind."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import kubernetes_validate
import pytest
from kubernetes import client

from stepgraph.dsl.reports import results as results_file
from stepgraph.targets.fleet import objects
from stepgraph.targets.fleet.cli import main as fleet_main
from stepgraph.targets.fleet.results import bind_to_node, failed_node, framed, from_log
from stepgraph.twin.world import parse_world
from stepgraph.twin.world_install import build_twin

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "scenarios" / "multi_dgd"
NS = "dynamo-power-test"


def test_every_object_is_valid_kubernetes():
    docs = [objects.service_account("ab12cd", NS), objects.role("ab12cd", NS), objects.role_binding("ab12cd", NS),
            objects.cluster_role("ab12cd"), objects.cluster_role_binding("ab12cd", NS),
            objects.work_cluster_role("ab12cd"), objects.work_role_binding("ab12cd", "stepgraph-ab12cd-gpu-node-7", NS),
            objects.run_namespace("ab12cd", "gpu-node-7"),
            objects.job("ab12cd", "gpu-node-7", "gpu-node-7", NS, "stepgraph-runner:1", ["scenarios/multi_dgd"],
                        {"DCGM_HOSTENGINE_AVAILABLE": "1"}, 3660)]
    for doc in docs:
        kubernetes_validate.validate(doc, "1.30", strict=True)


def test_a_runner_is_pinned_to_its_node_tolerates_every_taint_and_is_never_retried():
    job = objects.job("ab12cd", "gpu-node-7", "host-7", NS, "img:1", ["scenarios/multi_dgd"], {}, 3660)
    spec = job["spec"]["template"]["spec"]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-7"]}]}]
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "host-7"}
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert job["spec"]["backoffLimit"] == 0 and spec["restartPolicy"] == "Never"
    assert spec["serviceAccountName"] == objects.account_name("ab12cd")
    env = {e["name"]: e for e in spec["containers"][0]["env"]}
    assert env["STEPGRAPH_LIVE"]["value"] == "1"
    assert env["TEST_NODE"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert spec["containers"][0]["command"][:3] == ["stepgraph", "fleet", "node"]


@pytest.mark.parametrize("node", ["gpu-node-7", "GPU_Node.7", "n" * 80])
def test_job_names_are_dns_labels(node):
    name = objects.job_name("ab12cd", node)
    assert len(name) <= 63 and name.replace("-", "").isalnum() and name == name.lower()


def test_results_travel_through_the_log_and_a_torn_log_gives_none():
    document = {"schema": "x", "summary": {"passed": 1}, "scenarios": [{"nodeid": "a"}]}
    log = "collected 1 item\n...\n" + framed(document)
    assert from_log(log) == document
    assert from_log(log.rsplit("\n", 2)[0]) is None  # the end marker never came
    assert from_log("no results here\n") is None


def test_a_node_without_results_is_red_for_every_scenario_with_its_reason(tmp_path):
    records = failed_node([CATALOG], "gpu-node-3", "runner pod never scheduled within 300 s: 0/3 nodes are available")
    ids = {r["id"] for r in records}
    assert {"B5", "C1", "NVML-CAPS"} <= ids
    assert all(r["outcome"] == "error" and r["world"] == "node gpu-node-3" for r in records)
    assert all(r["reason"].startswith("node gpu-node-3: runner pod never scheduled") for r in records)
    doc = results_file.assemble(records, started_at=datetime.now(UTC), duration_s=0.0, args=[],
                                collection_errors=[])
    results_file.write(doc, tmp_path / "results.json")
    assert results_file.load(tmp_path / "results.json")["summary"]["error"] == len(records)  # schema-checked


def test_a_nodes_records_go_to_its_column():
    document = {"scenarios": [{"nodeid": "f::t", "world": None, "fingerprint": {"k": "v"}, "outcome": "passed"}]}
    [record] = bind_to_node(document, "n2")
    assert record["world"] == "node n2" and record["fingerprint"] == {"k": "v", "node": "n2"}
    assert record["nodeid"] == "f::t[n2]"


@pytest.fixture
def twin():
    with build_twin(parse_world("nodes: [{name: n1}, {name: n2}]")) as t:
        yield t


def test_no_matching_node_is_one_line_and_exit_2(twin, capsys):
    code = fleet_main(["run", "--nodes", "gpu=none", "--image", "img:1", "--kubeconfig", str(twin.kubeconfig_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == "stepgraph fleet: no node matches --nodes 'gpu=none' — check the labels"


def test_bad_usage_is_one_line_and_exit_2(capsys):
    assert fleet_main(["run", "--nodes", "a=b"]) == 2
    assert fleet_main(["run", "--nodes", "a=b", "--image", "i", "--env", "NOVALUE"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("stepgraph fleet: ") for line in lines)


def test_an_api_refusal_is_one_line_and_exit_2(twin, tmp_path, capsys):
    code = fleet_main(["run", "--nodes", "power-test/node=target", "--image", "img:1", "--reports", str(tmp_path),
                       "--namespace", "nowhere", "--kubeconfig", str(twin.kubeconfig_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "404" in err and "'nowhere'" in err


@pytest.fixture
def real_twin():
    world = parse_world("timing: {pod_startup_seconds: 0.2}\nnodes: [{name: n1}, {name: n2}, {name: n3}]")
    with build_twin(world, clock="real") as t:
        yield t


def _fleet(twin, tmp_path, *extra):
    return fleet_main(["run", "--nodes", "power-test/node=target", "--image", "stepgraph-runner:test",
                       "--reports", str(tmp_path), "--kubeconfig",
                       str(twin.kubeconfig_path), "--design", str(ROOT / "docs/design/multi-tenant-test-plan.md"),
                       *extra])


def test_runners_land_one_per_node_and_a_silent_fleet_is_red_then_gone(real_twin, tmp_path, capsys):
    """Runner pods that never print results (the twin runs no program for this image): each node
    red with the reason, and no Job or pod left after the run."""
    batch, core = client.BatchV1Api(real_twin.api_client()), client.CoreV1Api(real_twin.api_client())
    placed: dict[str, str] = {}

    def watch(_event, pod):  # where the scheduler put each runner (from the store's own events)
        node = (pod["metadata"].get("annotations") or {}).get(objects.NODE_ANNOTATION)
        if node and pod["spec"].get("nodeName"):
            placed[node] = pod["spec"]["nodeName"]

    rbac_seen: set[str] = set()
    run_namespaces: dict[str, str] = {}  # namespace → the node whose runner it is for
    real_twin.store.subscribe("namespaces", lambda e, ns: run_namespaces.setdefault(
        ns["metadata"]["name"], (ns["metadata"].get("annotations") or {}).get(objects.NODE_ANNOTATION))
        if objects.RUN_LABEL in (ns["metadata"].get("labels") or {}) else None)
    real_twin.store.subscribe("pods", watch)
    for kind in ("serviceaccounts", "roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io",
                 "clusterroles.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io"):
        real_twin.store.subscribe(kind, lambda e, obj, kind=kind: rbac_seen.add(kind.split(".")[0])
                                  if obj["metadata"]["name"].startswith(objects.NAME) else None)
    code = _fleet(real_twin, tmp_path, "--timeout", "3", "--schedule-timeout", "2")
    out = capsys.readouterr().out
    assert code == 1, out
    assert placed == {"n1": "n1", "n2": "n2", "n3": "n3"}
    records = results_file.load(tmp_path / "results.json")["scenarios"]
    assert {r["world"] for r in records} == {"node n1", "node n2", "node n3"}
    assert all(r["outcome"] == "error" and "no result within 3 s (runner pod Running)" in r["reason"] for r in records)
    assert "node n2: FAILED — no result within 3 s" in out
    assert "cleaned up: removed 3 Job(s) and their runner pods, 3 runner namespace(s), 6 RBAC object(s)" in out
    assert sorted(run_namespaces.values()) == ["n1", "n2", "n3"] and len(set(run_namespaces)) == 3
    assert not [n for n in core.list_namespace().items if n.metadata.name in run_namespaces]
    assert batch.list_namespaced_job(NS).items == []
    assert core.list_namespaced_pod(NS, label_selector=objects.RUN_LABEL).items == []
    assert rbac_seen == {"serviceaccounts", "roles", "rolebindings", "clusterroles", "clusterrolebindings"}
    rbac = client.RbacAuthorizationV1Api(real_twin.api_client())
    assert not [r for r in rbac.list_namespaced_role(NS).items if r.metadata.name.startswith(objects.NAME)]
    assert not [r for r in rbac.list_cluster_role().items if r.metadata.name.startswith(objects.NAME)]
    assert objects.NAME not in {sa.metadata.name for sa in core.list_namespaced_service_account(NS).items}


def test_ctrl_c_deletes_the_jobs_and_their_pods(real_twin, tmp_path):
    batch, core = client.BatchV1Api(real_twin.api_client()), client.CoreV1Api(real_twin.api_client())
    from stepgraph.targets.fleet.run import FleetRun, FleetSettings

    def interrupt(line):
        if "Job(s)" in line:  # all Jobs are in: the user presses Ctrl-C
            raise KeyboardInterrupt

    fleet = FleetRun(real_twin.api_client(), FleetSettings(NS, "stepgraph-runner:test", ["scenarios/multi_dgd"],
                                                           service_account="default"), log=interrupt)
    with pytest.raises(KeyboardInterrupt):
        fleet.run([{"name": n, "hostname": n} for n in ("n1", "n2", "n3")])
    assert batch.list_namespaced_job(NS).items == []
    assert core.list_namespaced_pod(NS, label_selector=objects.RUN_LABEL).items == []
    assert core.list_namespace(label_selector=objects.RUN_LABEL).items == []
    assert fleet.cleaned == ["3 Job(s) and their runner pods", "3 runner namespace(s)"]


def test_a_ctrl_c_during_a_request_is_raised_as_the_next_pause_begins(real_twin):
    # Raised inside a request it could leave the client's connection pool locked for good, and the
    # clean-up's first request would wait forever: seen once as a fleet run that never ended.
    import os
    import signal

    from stepgraph.targets.fleet.run import FleetRun, FleetSettings

    fleet = FleetRun(real_twin.api_client(), FleetSettings(NS, "stepgraph-runner:test", [], service_account="default"))
    with fleet._signals_handled():
        try:
            os.kill(os.getpid(), signal.SIGINT)  # handled here, as it would be in a request: not pausing
            raised_at_once = False
        except KeyboardInterrupt:
            raised_at_once = True
        assert not raised_at_once and fleet._signals == [signal.SIGINT]
        with pytest.raises(KeyboardInterrupt):
            fleet._pause(600)  # raised as it begins, not after the wait


def test_a_ctrl_c_no_pause_raised_is_raised_once_the_run_has_cleaned_up(real_twin):
    # A run whose nodes all report before its next poll ends without a pause: the Ctrl-C noted
    # during one of its requests must still end it as interrupted, after the clean-up.
    import os
    import signal

    from stepgraph.targets.fleet.run import FleetRun, FleetSettings

    fleet = FleetRun(real_twin.api_client(), FleetSettings(NS, "stepgraph-runner:test", [], service_account="default"))
    with fleet._signals_handled():
        os.kill(os.getpid(), signal.SIGINT)  # noted, not raised: the run is not pausing
        with pytest.raises(KeyboardInterrupt):
            fleet.cleanup()


@pytest.mark.parametrize("scheme", ["Bearer", "bearer"])  # the in-cluster config sends "bearer"
def test_a_runner_may_read_its_own_namespace_and_no_other(twin, scheme):
    api = twin.api_client()
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    core.create_namespaced_service_account(NS, objects.service_account("ab12cd", NS))
    rbac.create_cluster_role(objects.work_cluster_role("ab12cd"))
    own = objects.run_namespace("ab12cd", "n1")
    core.create_namespace(own)
    name = own["metadata"]["name"]
    rbac.create_namespaced_role_binding(name, objects.work_role_binding("ab12cd", name, NS))
    cfg = client.Configuration()
    cfg.host = api.configuration.host
    cfg.api_key = {"authorization": f"{scheme} {twin.auth.mint(NS, objects.account_name('ab12cd'))}"}
    runner = client.CoreV1Api(client.ApiClient(cfg))
    assert runner.read_namespace(name).metadata.name == name
    with pytest.raises(client.ApiException) as denied:
        runner.read_namespace(NS)
    assert denied.value.status == 403


def _fleet_process(twin, tmp_path):
    import subprocess
    import sys
    stepgraph = Path(sys.executable).with_name("stepgraph")  # the console script, as a user runs it
    return subprocess.Popen([str(stepgraph), "fleet", "run", "--nodes", "power-test/node=target",
                             "--image", "stepgraph-runner:test", "--reports", str(tmp_path), "--kubeconfig",
                             str(twin.kubeconfig_path), "--timeout", "300"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _interrupted_before_the_fleet_began(code: int, err: str) -> bool:
    """The signal came while the interpreter started, before our code ran: it died of it, or,
    inside the import of `site`, stopped with Python's own fatal error (exit 1). Or it came while
    the command loaded the fleet's code: the command says so (exit 2) — also when it landed in a
    finalizer of the import machinery, which Python only reports (it is raised again)."""
    import signal

    if code == -signal.SIGINT or (code == 1 and "Fatal Python error: init_import_site" in err):
        return True
    return code == 2 and err.strip().splitlines()[-1:] == ["stepgraph: interrupted"]


def _nothing_left(twin):
    api = twin.api_client()
    assert client.BatchV1Api(api).list_namespaced_job(NS).items == []
    assert client.CoreV1Api(api).list_pod_for_all_namespaces(label_selector=objects.RUN_LABEL).items == []
    assert client.CoreV1Api(api).list_namespace(label_selector=objects.RUN_LABEL).items == []
    assert client.RbacAuthorizationV1Api(api).list_cluster_role(label_selector=objects.RUN_LABEL).items == []
    assert client.CoreV1Api(api).list_namespaced_service_account(NS, label_selector=objects.RUN_LABEL).items == []


@pytest.mark.parametrize("when", ["at once", "while waiting", "twice, the second while cleaning up"])
def test_ctrl_c_at_any_moment_leaves_nothing_and_says_what_it_removed(real_twin, tmp_path, when):
    import signal
    import threading
    run = _fleet_process(real_twin, tmp_path)
    # A run that hangs fails this test (its output ends) instead of hanging the suite.
    watchdog = threading.Timer(150, run.kill)
    watchdog.start()
    try:
        if when != "at once":
            for line in run.stdout:  # the Jobs are in: the run is waiting for them
                if "Job(s) in" in line:
                    break
        run.send_signal(signal.SIGINT)
        if when.startswith("twice"):
            for line in run.stdout:
                if "removing its Jobs" in line:  # the clean-up has begun
                    break
            run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=180)
    finally:
        watchdog.cancel()
        run.kill()
        run.wait()
    if when == "at once" and _interrupted_before_the_fleet_began(run.returncode, err):
        _nothing_left(real_twin)
        return
    assert run.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("stepgraph fleet: interrupted — removed "), err
    if when != "at once":
        assert lines[0] == ("stepgraph fleet: interrupted — removed 3 Job(s) and their runner pods, "
                            "3 runner namespace(s), 6 RBAC object(s)")
    _nothing_left(real_twin)
