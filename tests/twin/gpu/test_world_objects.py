"""A world renders the objects the live test installs: agent DaemonSet per chart facts, DGDs."""

from __future__ import annotations

import json

from stepgraph.twin import world_objects
from stepgraph.twin.world import parse_world


def test_agent_daemonset_carries_the_chart_facts_per_variant():
    for variant, state in (("target", "/var/lib/dynamo-power-agent-test"), ("kaim", "/var/lib/dynamo-power-agent-kaim-test")):
        world = parse_world(f"variant: {variant}\n")
        ds = world_objects.agent_daemonset(world)
        spec = ds["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        assert ds["metadata"]["namespace"] == world.namespace
        assert ds["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"] == "power-agent"
        assert spec["hostPID"] is True and spec["nodeSelector"]["power-test/node"] == world.node_label
        assert container["command"] == ["python", "/app/power_agent.py", "--safe-default-watts=$(SAFE_DEFAULT_WATTS)",
                                        "--node-name=$(NODE_NAME)", "--prometheus-port=9100", "--actuator=nvml"]
        assert {"name": "state", "hostPath": {"path": state, "type": "DirectoryOrCreate"}} in spec["volumes"]
        assert container["resources"]["limits"]["memory"] == "256Mi"


def test_dcgm_and_namespace_restricted_flags():
    world = parse_world("agent: {actuator: dcgm, namespace_restricted: true}\nhostengine: {install: true}\n")
    command = world_objects.agent_daemonset(world)["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--namespace=$(POD_NAMESPACE)" in command
    assert command[-3:] == ["--dcgm-host=nvidia-dcgm-standalone.dynamo-power-test.svc.cluster.local",
                            "--dcgm-port=5555", "--dcgm-enforce=true"]


def test_dgd_renders_the_v1alpha1_services_with_the_planner_config():
    world = parse_world(
        "operator: {install: true}\n"
        "dgds: [{name: d, mode: agg, prefill: {gpus: 2, limit_watts: 375}, decode: {gpus: 2, limit_watts: 300},"
        " total_gpu_power_limit: 800}]\n")
    dgd = world_objects.dgd(world.dgds[0], world)
    services = dgd["spec"]["services"]
    assert sorted(services) == ["Frontend", "Planner", "VllmDecodeWorker"]  # agg: no prefill service
    config = json.loads(services["Planner"]["extraPodSpec"]["mainContainer"]["args"][1])
    assert config["mode"] == "agg" and config["decode_engine_gpu_power_limit"] == 300
    assert services["VllmDecodeWorker"]["resources"]["limits"]["gpu"] == "2"
    assert dgd["metadata"]["labels"] == {"purpose": "power-aware-multi-dgd-test"}
