"""Probe commands run in-process against a pod's view of the twin: output, exit codes, isolation."""

from __future__ import annotations

import sys
import threading

from gpu_rig import Rig
from stepgraph.twin.probe_exec import ProbeContext, run_probe

NVML_CAPS = """
import pynvml
pynvml.nvmlInit()
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    print(f"{i}={round(pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000)}")
"""

METRICS = """
import urllib.request
body = urllib.request.urlopen('http://127.0.0.1:9100/metrics', timeout=5).read().decode()
print(body)
"""


def probe_for(rig, agent=None, **kw):
    def http_get(port, path):
        if agent is not None and port == 9100 and path == "/metrics":
            return 200, "text/plain", agent.metrics.render()
        return None

    return ProbeContext(env={"NODE_NAME": "node-a"}, nvml=lambda: rig.devices.nvml().as_module(), http_get=http_get, **kw)


def test_nvml_probe_prints_caps_like_the_live_reader(rig):
    rig.board.gpus[3].set_limit_mw(325_000)
    result = run_probe(["python", "-c", NVML_CAPS], None, probe_for(rig))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.decode().split()
    assert lines[3] == "3=325" and len(lines) == 8


def test_metrics_probe_reaches_the_agents_port(rig):
    rig.topology()
    agent = rig.agent()
    agent.reconcile_once()
    out = run_probe(["python3", "-c", METRICS], None, probe_for(rig, agent)).stdout.decode()
    assert 'dynamo_power_agent_applied_limit_watts{gpu="0"} 450.0' in out


def test_closed_port_is_connection_refused_and_a_traceback(rig):
    result = run_probe(["python3", "-c", METRICS], None, probe_for(rig, agent=None))
    assert result.exit_code == 1
    assert b"Traceback (most recent call last)" in result.stderr and b"Connection refused" in result.stderr


def test_sys_exit_code_and_stderr_are_kept(rig):
    script = "import sys\nprint('bad', file=sys.stderr)\nsys.stdout.write('partial')\nsys.exit(3)"
    result = run_probe(["python", "-c", script], None, probe_for(rig))
    assert (result.stdout, result.stderr, result.exit_code) == (b"partial", b"bad\n", 3)


def test_script_from_stdin(rig):
    assert run_probe(["python3", "-"], b"print(6 * 7)", probe_for(rig)).stdout == b"42\n"


def test_host_modules_are_not_importable(rig):
    result = run_probe(["python", "-c", "import subprocess"], None, probe_for(rig))
    assert result.exit_code == 1 and b"No module named 'subprocess'" in result.stderr


def test_env_is_the_containers(rig):
    result = run_probe(["python", "-c", "import os; print(os.environ['NODE_NAME'])"], None, probe_for(rig))
    assert result.stdout == b"node-a\n"


def test_unknown_program_is_127_as_in_a_container(rig):
    result = run_probe(["curl", "http://127.0.0.1:9100/metrics"], None, probe_for(rig))
    assert result.exit_code == 127 and b"executable file not found" in result.stderr


def test_dcgmi_runs_only_where_a_hostengine_answers(rig):
    engine = rig.devices.start_hostengine()
    ok = run_probe(["dcgmi", "group", "--list", "-j"], None, probe_for(rig, dcgmi=engine.dcgmi))
    assert ok.exit_code == 0 and ok.stdout.startswith(b'{"body": []')
    assert run_probe(["dcgmi", "group", "--list", "-j"], None, probe_for(rig)).exit_code == 127


def test_concurrent_probes_never_mix_output_or_touch_sys_stdout():
    rig = Rig()
    before = sys.stdout
    results = {}

    def worker(n):
        script = f"for _ in range(200):\n    print({n})"
        results[n] = run_probe(["python", "-c", script], None, probe_for(rig)).stdout

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sys.stdout is before
    assert all(out == f"{n}\n".encode() * 200 for n, out in results.items())


def test_interpreter_flags_before_c_are_accepted(rig):
    result = run_probe(["python3", "-u", "-B", "-c", "from pynvml import *\nnvmlInit()\nprint(nvmlDeviceGetCount())"],
                       None, probe_for(rig))
    assert (result.stdout, result.exit_code) == (b"8\n", 0)


def test_json_probe_output_round_trips(rig):
    script = "import json, pynvml\npynvml.nvmlInit()\nprint(json.dumps({'n': pynvml.nvmlDeviceGetCount()}))"
    assert run_probe(["python", "-c", script], None, probe_for(rig)).stdout == b'{"n": 8}\n'
