"""No orphans: a program started for a process container dies with the runner, even when the
runner itself is killed with SIGKILL and never gets to clean up."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap

from process_rig import TINY, eventually, pid_alive

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
    print(re.search(r"^pid (\\d+)$", text, re.M).group(1), flush=True)
    time.sleep(600)
""")


def test_a_runner_killed_with_sigkill_takes_its_programs_with_it():
    runner = subprocess.Popen([sys.executable, "-c", RUNNER], stdout=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([runner.stdout], [], [], 60)
        assert ready, "the runner did not start its program within 60 s"
        pid = int(runner.stdout.readline())
        assert pid_alive(pid)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(timeout=10)
        eventually(lambda: not pid_alive(pid), timeout=10, what="the program's end after its runner's")
    finally:
        runner.kill()
        runner.wait()
