"""Raw streaming exec and the shipped probes, against a twin over loopback with the official client."""

from __future__ import annotations

import json
import urllib.request

import pytest
from kubernetes import client

from stepgraph.dsl import Bindings, FinalizerStack, StepContext
from stepgraph.steps._clients import ExecError, NotFound, exec_in_pod
from stepgraph.steps._cluster import AGENT_SELECTOR, cluster
from stepgraph.steps._parsers import OutputFormatError, metric_sum, parse_kv_lines
from stepgraph.steps.dcgm import power_limits
from stepgraph.targets.twin import TwinTarget


@pytest.fixture(scope="module")
def ctx():
    target = TwinTarget(env={})
    session = target.start({"world": "path-b-dcgm"})
    step_ctx = StepContext(session=session, bindings=Bindings(), finalizers=FinalizerStack())
    session.clock.sleep(10)  # the agent and hostengine DaemonSet pods start
    yield step_ctx
    target.twin.stop()


def test_exec_returns_stdout_stderr_and_the_exit_code(ctx: StepContext) -> None:
    c = cluster(ctx)
    script = "import sys, json\nprint(json.dumps({'a': 1}))\nprint('careful', file=sys.stderr)\nsys.exit(3)"
    result = exec_in_pod(c.core, c.agent_pod().metadata.name, c.namespace, ["python3", "-c", script])
    assert (json.loads(result.stdout), result.stderr, result.exit_code) == ({"a": 1}, "careful\n", 3)
    with pytest.raises(ExecError, match="exit code 3: careful"):
        result.check("the script")


def test_exec_of_a_missing_program_is_exit_127(ctx: StepContext) -> None:
    c = cluster(ctx)
    result = exec_in_pod(c.core, c.agent_pod().metadata.name, c.namespace, ["curl", "http://127.0.0.1:9100"])
    assert result.exit_code == 127 and "executable file not found" in result.stderr


def test_exec_into_a_missing_pod_is_not_found(ctx: StepContext) -> None:
    c = cluster(ctx)
    with pytest.raises(NotFound):
        exec_in_pod(c.core, "no-such-pod", c.namespace, ["true"])


def test_nvml_probes_read_eight_gpus_at_their_a100_defaults(ctx: StepContext) -> None:
    c = cluster(ctx)
    assert c.nvml_caps() == {i: 400 for i in range(8)}
    assert c.nvml_pids() == {i: [] for i in range(8)}
    limits = parse_kv_lines(c.probe("nvml_limits"))
    assert limits["0"].split(",")[0] == "400" and len(limits) == 8
    uuids = parse_kv_lines(c.probe("nvml_uuids"))
    assert len(set(uuids.values())) == 8 and all(u.startswith("GPU-") for u in uuids.values())


def test_metrics_probe_scrapes_the_agent_from_inside_its_pod(ctx: StepContext) -> None:
    samples = cluster(ctx).metrics()
    assert any(s.name.startswith("dynamo_power_agent_") for s in samples)
    assert metric_sum(samples, "dynamo_power_agent_multi_pod_gpu_total") == 0


def test_metrics_read_through_the_pod_proxy_match_the_exec_probe(ctx: StepContext) -> None:
    c = cluster(ctx)
    by_exec = {(s.name, tuple(sorted(s.labels.items()))) for s in c.metrics()}
    c.metrics_via = "proxy"
    try:
        calls = c.calls.total
        by_proxy = {(s.name, tuple(sorted(s.labels.items()))) for s in c.metrics()}
        assert c.calls.total == calls + 1
    finally:
        c.metrics_via = "exec"
    assert by_proxy == by_exec and any(name.endswith("_total") for name, _ in by_proxy)


def test_dcgm_groups_read_in_the_4_5_shape_and_the_4_4_shape(ctx: StepContext) -> None:
    c = cluster(ctx)
    core = client.CoreV1Api(c.api)
    stubs = [
        {"metadata": {"name": f"w{i}", "annotations": {"dynamo.nvidia.com/gpu-power-limit": str(300 + i)}},
         "spec": {"restartPolicy": "Never", "nodeSelector": {"power-test/node": "target"},
                  "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                  "containers": [{"name": "w", "image": "x", "command": ["python3", "-c", "import torch; torch.cuda.init()"],
                                  "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
        for i in range(8)
    ]
    for body in stubs:
        core.create_namespaced_pod(c.namespace, body)
    try:
        ctx.clock.sleep(20)
        readings = power_limits(c)
        assert sorted(cur for cur, _ in readings.values()) == list(range(300, 308))
        assert all(cur == target for cur, target in readings.values())
        _flip(c, {"dcgm_version": "4.4"})
        assert power_limits(c) == readings
        _flip(c, {"exec_preload_mangles_json": True})
        with pytest.raises(OutputFormatError, match="not dcgmi JSON"):
            power_limits(c)
    finally:
        _flip(c, {"dcgm_version": "4.5", "exec_preload_mangles_json": False})
        for body in stubs:
            core.delete_namespaced_pod(body["metadata"]["name"], c.namespace, grace_period_seconds=0)


def _flip(c, switches: dict) -> None:
    """Flip twin fault switches over its HTTP endpoint, as an operator of the twin would."""
    request = urllib.request.Request(f"{c.api.configuration.host}/twin/v1/faults", data=json.dumps(switches).encode(),
                                     method="PATCH", headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=5).read()


def test_local_nvml_runs_the_same_probe_with_this_processs_pynvml(ctx: StepContext) -> None:
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("a real NVML driver is present here, so the local probe would read real GPUs")
    c = cluster(ctx)
    c.nvml_via = "local"
    try:
        # No GPU driver where the tests run: the local probe really ran here, not in the agent pod.
        with pytest.raises(ExecError, match=r"local probe nvml_caps: exit code 1: .*NVML Shared Library Not Found"):
            c.nvml_caps()
        assert c.metrics()  # metrics still come from the agent pod
    finally:
        c.nvml_via = "exec"


def test_the_gpu_restore_reaches_the_agent_pod_that_runs_now(ctx: StepContext) -> None:
    """The teardown's GPU restore runs after scenarios that restart the agent: it must exec into the
    DaemonSet's new pod, not the one looked up when the scenario began (NotFound)."""
    from stepgraph.steps.nvml import restore_defaults

    c = cluster(ctx)
    old = c.agent_pod().metadata.name  # looked up and remembered, as a scenario's first probe does
    c.core.delete_namespaced_pod(old, c.namespace, grace_period_seconds=0)
    for _ in range(60):  # the DaemonSet replaces it within a few twin seconds
        pods = c.core.list_namespaced_pod(c.namespace, label_selector=AGENT_SELECTOR).items
        if [p for p in pods if p.metadata.name != old and p.status.phase == "Running"]:
            break
        ctx.session.clock.sleep(1)
    assert restore_defaults(c) == {i: "400,400,400,ok" for i in range(8)}
    assert c.agent_pod().metadata.name != old
