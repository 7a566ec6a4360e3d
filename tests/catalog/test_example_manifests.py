"""Our example manifests: rendered per variant from one source, valid, and shaped as the topology says."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import kubernetes_validate
import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "examples" / "manifests"
spec = importlib.util.spec_from_file_location("render_manifests", MANIFESTS / "render.py")
render = importlib.util.module_from_spec(spec)
spec.loader.exec_module(render)


def load(variant: str, name: str) -> list[dict]:
    return [d for d in YAML(typ="safe", pure=True).load_all((MANIFESTS / variant / name).read_text()) if d]


@pytest.mark.parametrize("variant", sorted(render.VARIANTS))
def test_rendered_folder_matches_its_templates(variant: str) -> None:
    on_disk = {p.name: p.read_text() for p in (MANIFESTS / variant).glob("*.yaml")}
    assert on_disk == render.render(variant), "run: python examples/manifests/render.py"


@pytest.mark.parametrize("variant", sorted(render.VARIANTS))
def test_every_core_object_validates_against_the_kubernetes_schema(variant: str) -> None:
    checked = 0
    for path in sorted((MANIFESTS / variant).glob("*.yaml")):
        for doc in load(variant, path.name):
            if doc["apiVersion"] in ("v1", "apps/v1", "rbac.authorization.k8s.io/v1"):
                kubernetes_validate.validate(doc, "1.30", strict=True)
                checked += 1
    assert checked >= 12


@pytest.mark.parametrize("variant", sorted(render.VARIANTS))
def test_variant_values_land_everywhere(variant: str) -> None:
    values = render.VARIANTS[variant]
    for path in sorted((MANIFESTS / variant).glob("*.yaml")):
        for doc in load(variant, path.name):
            if doc["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
                assert doc["metadata"]["namespace" if doc["kind"] != "Namespace" else "name"] == values["namespace"]
    text = "".join(p.read_text() for p in (MANIFESTS / variant).glob("*.yaml"))
    other = "kaim" if variant == "target" else "target"
    assert f"power-test/node: {values['node_label']}" in text
    assert f"power-test/node: {other}\n" not in text


def test_stub_workers_claim_all_eight_gpus_with_the_topology_caps() -> None:
    pods = load("target", "50-stub-workers.yaml")
    gpus = [int(p["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]) for p in pods]
    caps = {p["metadata"]["name"]: int(p["metadata"]["annotations"]["dynamo.nvidia.com/gpu-power-limit"]) for p in pods}
    assert gpus == [1, 1, 2, 2, 2]
    assert caps == {"vllm-dgd-a-prefill": 350, "vllm-dgd-a-decode": 325, "vllm-dgd-b-prefill": 375,
                    "vllm-dgd-b-decode": 325, "vllm-dgd-c-decode": 300}
    per_gpu = Counter(w for w, n in zip(caps.values(), gpus, strict=True) for _ in range(n))
    assert per_gpu == Counter({375: 2, 325: 3, 300: 2, 350: 1})


def test_bystander_claims_no_gpu_and_sees_all() -> None:
    (pod,) = load("target", "40-conflict-bystander.yaml")
    container = pod["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in str(container["resources"])
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"} in container["env"]
    assert pod["metadata"]["annotations"]["dynamo.nvidia.com/gpu-power-limit"] == "200"


@pytest.mark.parametrize(("name", "actuator"), [("10-power-agent-nvml.yaml", "nvml"), ("11-power-agent-dcgm.yaml", "dcgm")])
def test_agent_daemonset_is_rendered_as_the_chart_does(name: str, actuator: str) -> None:
    (ds,) = load("target", name)
    pod = ds["spec"]["template"]
    assert pod["metadata"]["labels"] == {
        "app.kubernetes.io/name": "power-agent",
        "app.kubernetes.io/instance": "power-agent",
        "app.kubernetes.io/component": "power-agent",
    }
    assert pod["spec"]["hostPID"] is True
    command = pod["spec"]["containers"][0]["command"]
    assert command[:4] == ["python", "/app/power_agent.py", "--safe-default-watts=$(SAFE_DEFAULT_WATTS)",
                           "--node-name=$(NODE_NAME)"]
    assert f"--actuator={actuator}" in command
    assert pod["spec"]["containers"][0]["resources"]["limits"]["memory"] == "256Mi"


def test_dgds_have_a_planner_and_the_expected_worker_roles() -> None:
    roles = {}
    for name in ("30-vllm-dgd-a.yaml", "31-vllm-dgd-b.yaml", "32-vllm-dgd-c.yaml"):
        dgd = next(d for d in load("target", name) if d["kind"] == "DynamoGraphDeployment")
        services = dgd["spec"]["services"]
        assert services["Planner"]["componentType"] == "planner"
        roles[dgd["metadata"]["name"]] = sorted(
            s["subComponentType"] for s in services.values() if s["componentType"] == "worker"
        )
    assert roles == {"vllm-dgd-a": ["decode", "prefill"], "vllm-dgd-b": ["decode", "prefill"], "vllm-dgd-c": ["decode"]}
