"""No orphans: a program started for a process container dies with the runner, even when the
runner itself is killed with SIGKILL and never gets to clean up."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from process_rig import TINY, eventually, pid_alive

from stepgraph.dsl.tempdirs import sweep_stale
from stepgraph.twin.process.view import ViewError

RUNNER = textwrap.dedent(f"""
    import re, sys, time
    from kubernetes import client
    from stepgraph.twin import NodeConfig, Twin
    from stepgraph.twin.process.runtime import ContainerMatch, Program
    twin = Twin(clock="real", node=NodeConfig(startup_delay=0.0)).start()
    program = Program(root={str(TINY.parent)!r}, entrypoint=("python3", "/app/{TINY.name}"))
    twin.processes.register(twin.workloads, "tiny", ContainerMatch(image="tiny"), program)
    core = client.CoreV1Api(twin.api_client())
    core.create_namespaced_pod("default", {{"metadata": {{"name": "p"}},
        "spec": {{"containers": [{{"name": "main", "image": "tiny:1"}}]}}}})
    while True:
        try:
            text = core.read_namespaced_pod_log("p", "default")
        except client.exceptions.ApiException:
            text = ""
        if "ready" in text:
            break
        time.sleep(0.02)
    print(re.search(r"^pid (\\d+)$", text, re.M).group(1), twin.processes.node_view().folder, flush=True)
    time.sleep(600)
""")


def test_a_runner_killed_with_sigkill_takes_its_programs_with_it():
    runner = subprocess.Popen([sys.executable, "-c", RUNNER], stdout=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([runner.stdout], [], [], 60)
        assert ready, "the runner did not start its program within 60 s"
        pid_text, folder = runner.stdout.readline().split()
        pid = int(pid_text)
        assert pid_alive(pid)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(timeout=10)
        eventually(lambda: not pid_alive(pid), timeout=10, what="the program's end after its runner's")
        # the view's folder outlives a killed runner; the next run's sweep removes it
        assert Path(folder).exists()
        assert Path(folder) in sweep_stale(str(Path(folder).parent))
    finally:
        runner.kill()
        runner.wait()


def test_a_stopped_twin_leaves_no_view_folder_and_a_late_container_start_makes_none(twin, core, tiny):
    core.create_namespaced_pod("default", {"metadata": {"name": "p"},
                                           "spec": {"containers": [{"name": "main", "image": "tiny:1"}]}})
    eventually(lambda: "ready" in core.read_namespaced_pod_log("p", "default"), what="the program's start")
    folder = twin.processes.node_view().folder
    twin.stop()
    assert not folder.exists()
    ours = f"stepgraph-view-{os.getpid()}-*"  # other runs share the temp folder
    before = set(folder.parent.glob(ours))
    with pytest.raises(ViewError, match="closed"):  # a kubelet start racing the stop
        twin.processes.node_view()
    assert set(folder.parent.glob(ours)) - before == set()
