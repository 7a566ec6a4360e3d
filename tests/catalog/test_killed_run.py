"""After a SIGKILL nothing is cleaned up by the killed run itself: the next run finds the pods
carrying the dead run's label, removes them (saying so in its last line), and ends with no
labelled object and every GPU at its default. The live target against a twin served from this
process (real clock, a world with fast timing, as `stepgraph twin up --world` serves it), so the
cluster outlives the killed run.

The run is killed once its bystander exists: a pod the next run's scenario does not create
itself, so only the next run's sweep of what other runs left can remove it. Both runs inherit one
pytest-xdist run id from their environment, as runs started by a test in an xdist worker do:
they must still tell each other apart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kubernetes import client

from stepgraph.steps._cluster import RUN_LABEL
from stepgraph.twin.world import parse_world
from stepgraph.twin.world_install import build_twin

ROOT = Path(__file__).resolve().parents[2]
FAST = "name: fast\ntiming: {pod_startup_seconds: 0.2, agent_tick_seconds: 1, worker_model_load_seconds: 0.2}\n"
NAMESPACE = "dynamo-power-test"
BYSTANDER = "power-conflict-bystander"  # conflict.feature creates it; nvml_caps.feature does not


def _labelled_pods(core: client.CoreV1Api) -> list[client.V1Pod]:
    return core.list_namespaced_pod(NAMESPACE, label_selector=RUN_LABEL).items


def _names(core: client.CoreV1Api) -> list[str]:
    return sorted(p.metadata.name for p in _labelled_pods(core))


def _live_run(env: dict[str, str], scenario: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "pytest", f"scenarios/multi_dgd/{scenario}", "--target", "live", "-q", "-p", "no:cacheprovider"]
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_the_run_after_a_sigkill_removes_what_the_killed_run_left() -> None:
    with build_twin(parse_world(FAST), clock="real") as twin:
        kubeconfig = twin.kubeconfig_path
        core = client.CoreV1Api(twin.api_client())
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "STEPGRAPH_LIVE": "1", "TEST_NODE": "twin-gpu-node",
               "PYTEST_XDIST_TESTRUNUID": "0123456789abcdef", "PYTEST_XDIST_WORKER": "gw0"}
        first = _live_run(env, "conflict.feature")
        deadline = time.monotonic() + 120
        while BYSTANDER not in _names(core) and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.2)  # a wait on another process's progress, read from the cluster
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=30)
        dead = {p.metadata.labels[RUN_LABEL] for p in _labelled_pods(core)}
        assert len(dead) == 1 and BYSTANDER in _names(core), _names(core)  # the premise: the kill left topology and bystander

        second = _live_run(env, "nvml_caps.feature")
        out, _ = second.communicate(timeout=300)
        last = out.strip().splitlines()[-1]
        assert second.returncode == 0, out[-3000:]
        killed = dead.pop()
        assert f"removed what run(s) {killed} left: " in last and f"Pod/{BYSTANDER}" in last, last
        assert f"run-end check of run {killed}" not in last, last  # the second run has an id of its own
        assert last.endswith("nothing left behind") and "checked by the run-end check" in last, last  # GPUs read back at default
        assert _names(core) == []
