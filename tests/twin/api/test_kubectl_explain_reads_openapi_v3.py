"""OpenAPI v3 with component schemas: `kubectl explain` describes built-in kinds (the upstream
definitions the server validates with) and custom resources (their CRD's schema)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from test_crds_serve_custom_resources import dgd_crd

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


def explain(twin, *args) -> str:
    done = subprocess.run(["kubectl", "--kubeconfig", str(twin.kubeconfig_path), "explain", *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_explain_a_built_in_field(twin):
    out = explain(twin, "deployments.spec.replicas")
    assert "KIND:       Deployment" in out and "FIELD: replicas <integer>" in out
    assert "Number of desired pods." in out


def test_explain_walks_references_into_nested_kinds(twin):
    out = explain(twin, "pods.spec.containers.resources")
    assert "FIELD: resources <ResourceRequirements>" in out and "limits\t<map[string]Quantity>" in out


def test_explain_a_custom_resource_from_its_crd_schema(twin, ext):
    ext.create_custom_resource_definition(dgd_crd())
    out = explain(twin, "dynamographdeployments.spec", "--api-version=nvidia.com/v1alpha1")
    assert "KIND:       DynamoGraphDeployment" in out and "backendFramework\t<string>" in out
    assert "enum: sglang, vllm, trtllm" in out
