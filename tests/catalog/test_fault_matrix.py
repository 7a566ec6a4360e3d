"""Discrimination: for every scenario, a twin fault switch that breaks the behaviour it checks makes
it fail, and the failure says what was expected and what was observed. Switches that model a
harmless variation (the other dcgmi JSON shape, in-order GPU assignment) must keep it green.
"""

from __future__ import annotations

import pytest
from catalog_runs import CatalogRun, run_many
from ruamel.yaml import YAML
from twin_fault_flips import FlipAfterStep

AFTER_CAPS = "within 3 agent ticks the NVML power limits of all GPUs are"
# (world, fault switches[, flipped after the step starting with]) → scenario files run together;
# scenario id → text its failure must show.
BREAKING: dict[tuple[str, ...], tuple[tuple[str, ...], dict[str, tuple[str, ...]]]] = {
    ("path-a", "{planner_patches_foreign_pod: true}"): (
        ("annotations.feature", "foreign_overwrite.feature"),
        {"A1-A2": ("expected: {'vllm-dgd-a/decode': 325", "observed:"),
         "A2-strict": ("expected:", "observed:"),
         "A4": ("expected:", "observed:")},
    ),
    ("path-a", "{agg_planner_runs_prefill: true}"): (
        ("annotations.feature",),
        {"A3": ("patches by the planner of vllm-dgd-c", "expected: none with 375 W", "observed: ['vllm-dgd-c-")},
    ),
    ("path-b", "{nvml_no_permission: true}"): (
        ("applied_limit_metric.yaml", "nvml_caps.feature"),
        {"B2": ("applied_limit_watts", "expected: [300, 300, 325", "observed: {}"),
         "NVML-CAPS": ("expected: [300, 300, 325", "observed: {0: 400")},
    ),
    # Flipped once the topology's caps are in place, so only the change under test meets the fault.
    ("path-b", "{nvml_no_permission: true}", AFTER_CAPS): (
        ("annotation_change.feature", "pod_restart.feature"),
        {"C1": ("expected: [310, 310, 325, 325, 325, 350, 375, 375]", "observed:", ": 300"),
         "E2": ("expected: [300, 300, 325, 325, 325, 360, 375, 375]", "observed:", ": 350")},
    ),
    ("path-b", "{nvml_no_permission: true}", "a baseline of the Power Agent counters"): (
        ("zero_counters.yaml",),
        {"B4-D3": ("counter apply_failures_total since c0", "expected: unchanged at 0", "observed:")},
    ),
    ("path-b", "{agent_ignores_conflicts: true}"): (
        ("conflict.feature",),
        {"B5": ("multi_pod_gpu_total{disposition=conflict}", "expected: grew by ≥ 1", "observed: grew by 0")},
    ),
    ("path-b", "{agent_writes_wrong_gpu: true}"): (
        ("conflict.feature",),
        {"B5": ("NVML power limit of GPU", "expected: 280 W", "observed:")},
    ),
    ("path-b-dcgm", "{dcgm_enforce_fails_gpus: [0]}"): (
        ("zero_counters.yaml", "dcgm_target.yaml"),
        {"B4-D3": ("dcgm_enforce_failures_total", "expected: unchanged at", "observed:"),
         "B8": ("dcgm_enforce_failures_total", "expected: unchanged at", "observed:")},
    ),
    ("path-b-dcgm", "{rbac_namespace_restricted: true}"): (
        ("dcgm_current.yaml",),
        {"DCGM-CURRENT": ("DCGM groups", "expected: dynamo-power-agent-gpu-<idx> groups", "observed: none")},
    ),
    ("path-b-dcgm", "{exec_preload_mangles_json: true}"): (
        ("dcgm_current.yaml",),
        {"DCGM-CURRENT": ("is not dcgmi JSON", "\"{'body':")},
    ),
    ("path-b", "{rbac_namespace_restricted: true}"): (
        ("agent_sees_every_pod.feature",),
        {"B1": ("applied_limit_watts", "expected: [300, 300, 325", "observed: {}")},
    ),
    ("path-a", "{agent_counts_processes: true}"): (
        ("tp_helper_processes.yaml",),
        {"B3": ("multi_pod_gpu_total{disposition=agree} since c0", "expected: unchanged at", "observed:")},
    ),
    ("path-b-dcgm", "{agent_never_reconnects: true}"): (
        ("dcgm_reconnect.feature", "hostengine_restart.feature"),
        {"B7": ("expected: [310, 310, 325, 325, 325, 350, 375, 375]", "observed:", ": 300"),
         "E3": ("expected:", "observed:")},
    ),
    ("path-b", "{agent_never_restores: true}"): (
        ("agent_stop.feature",),
        {"C2": ("every GPU at its default NVML limit", "expected: limit == default on every GPU", "observed:")},
    ),
    ("path-b", "{agent_skips_orphan_recovery: true}"): (
        ("agent_restart.feature",),
        {"C3-b": ("expected: [300, 300, 325, 350, 400, 400, 400, 400]", "observed:", ": 375"),
         "C3-c": ("expected: [400, 400, 400, 400, 400, 400, 400, 400]", "observed:", ": 375")},
    ),
    ("path-b", "{agent_writes_twice: true}"): (
        ("agent_restart.feature", "steady_state_writes.yaml"),
        {"C3-a": ("cap writes per GPU since w0", "expected: 1 on each of 8 GPUs (8 in all)", "observed: {0: 2"),
         "C4": ("cap writes per GPU since w0", "expected: 5 on each of 8 GPUs (40 in all)", "observed: {0: 10")},
    ),
    ("path-a", "{planner_projects_every_dgd: true}"): (
        ("planner_projection.feature",),
        # Which planner shows it first depends on which others had annotated workers at its last pass.
        {"D2": ("power gauges of the planner of vllm-dgd-", "expected: {'projected': ", "observed: {'projected': ")},
    ),
    # Flipped once the planner is gone: the caps still read right (a refused write changes nothing),
    # but the agent no longer applies them — which only the failure counter can show.
    ("path-a", "{nvml_no_permission: true}", 'the planner of "vllm-dgd-b" crashes'): (
        ("planner_crash.feature",),
        {"E1": ("counter apply_failures_total since c0", "expected: unchanged at 0", "observed:")},
    ),
}
HARMLESS: dict[tuple[str, str], tuple[str, ...]] = {
    ("path-b-dcgm", "{dcgm_version: '4.4'}"): ("dcgm_current.yaml", "dcgm_target.yaml"),
    ("path-b", "{gpu_assignment: sequential}"): ("conflict.feature", "nvml_caps.feature"),
}
CATALOG_IDS = {"A1-A2", "A3", "A2-strict", "B2", "B4-D3", "NVML-CAPS", "B5", "DCGM-CURRENT", "B8", "C1", "E2", "A4",
               "B1", "B3", "B7", "C2", "C3-a", "C3-b", "C3-c", "C4", "D2", "E1", "E3"}


def _job(world: str, faults: str, *after: str, files: tuple[str, ...]) -> dict:
    if after:  # flip at run time, right after that step
        switches = YAML(typ="safe", pure=True).load(faults)
        return {"args": ["--target-option", f"world={world}"], "files": files, "plugins": (FlipAfterStep(after[0], switches),)}
    return {"args": ["--target-option", f"world={world}", "--target-option", f"faults={faults}"], "files": files}


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, ...], CatalogRun]:
    jobs = {key: _job(*key, files=files) for key, (files, _) in BREAKING.items()}
    jobs |= {key: _job(*key, files=files) for key, files in HARMLESS.items()}
    return run_many(jobs)


def test_every_scenario_has_a_breaking_fault() -> None:
    covered = {sid for _, checks in BREAKING.values() for sid in checks}
    assert covered == CATALOG_IDS


@pytest.mark.parametrize(
    ("key", "scenario"), [(key, sid) for key, (_, checks) in BREAKING.items() for sid in checks], ids=lambda v: str(v)
)
def test_fault_makes_the_scenario_fail_saying_expected_and_observed(
    runs: dict[tuple[str, ...], CatalogRun], key: tuple[str, ...], scenario: str
) -> None:
    run = runs[key]
    result = run.outcomes.get(scenario)
    assert result is not None, run.output[-2000:]
    assert result["outcome"] == "failed", f"{scenario} did not fail under {key}"
    for text in BREAKING[key][1][scenario]:
        assert text in result["text"], f"{scenario} under {key}: {text!r} not in the failure:\n{result['text'][-1500:]}"


@pytest.mark.parametrize("key", list(HARMLESS), ids=str)
def test_harmless_variation_keeps_the_scenarios_green(runs: dict[tuple[str, ...], CatalogRun], key: tuple[str, str]) -> None:
    run = runs[key]
    assert run.returncode == 0, run.output[-3000:]
    assert run.ids("passed") and not run.ids("failed") | run.ids("error")
