"""Our own example manifests run on the twin: the agent DaemonSet as the chart renders it (its RBAC,
NVML and DCGM actuators, the hostengine beside it) caps the stub workers to the topology."""

from __future__ import annotations

from collections import Counter

import pytest

from stepgraph.dsl import Bindings, FinalizerStack, StepContext
from stepgraph.steps._cluster import cluster
from stepgraph.steps.dcgm import power_limits
from stepgraph.steps.k8s import apply_documents, load_manifest
from stepgraph.targets.twin import TwinTarget

TOPOLOGY = Counter({350: 1, 325: 3, 375: 2, 300: 2})


@pytest.fixture
def bare_twin(tmp_path):
    """A twin whose world installs no agent and no hostengine: the manifests must bring them."""
    world = tmp_path / "bare.yaml"
    world.write_text("name: bare\nnodes:\n  - {name: twin-gpu-node, gpus: 8, sku: A100-SXM4-80GB}\nagent: {install: false}\n")
    target = TwinTarget(env={})
    session = target.start({"world": str(world)})
    yield StepContext(session=session, bindings=Bindings(), finalizers=FinalizerStack())
    target.twin.stop()


def _apply(ctx: StepContext, *names: str) -> None:
    c = cluster(ctx)
    for name in names:
        apply_documents(ctx, load_manifest(c.manifest(name), c.namespace))


@pytest.mark.parametrize("actuator", ["nvml", "dcgm"])
def test_the_agent_manifest_caps_the_stub_workers(bare_twin: StepContext, actuator: str) -> None:
    ctx = bare_twin
    # The agent lists pods as its own service account, so the chart's RBAC comes first.
    _apply(ctx, "09-power-agent-rbac.yaml")
    if actuator == "dcgm":
        _apply(ctx, "20-dcgm-hostengine.yaml", "11-power-agent-dcgm.yaml")
    else:
        _apply(ctx, "10-power-agent-nvml.yaml")
    ctx.clock.sleep(10)
    c = cluster(ctx)
    assert c.find_agent().spec.host_pid is True
    _apply(ctx, "50-stub-workers.yaml")
    ctx.clock.sleep(40)
    assert Counter(c.nvml_caps().values()) == TOPOLOGY
    if actuator == "dcgm":
        assert Counter(current for current, _ in power_limits(c).values()) == TOPOLOGY
