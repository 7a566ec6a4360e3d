"""Checks judged together in one window, on the twin: two checks that each hold, at different
moments, pass one after the other and fail together; checks that do hold at one moment pass
together, in Gherkin and in YAML."""

from __future__ import annotations

import pytest
from catalog_runs import CatalogRun, run_catalog

OLD, NEW = "350, 325×3, 375×2, 300×2", "350, 325×3, 375×2, 310×2"

FEATURE = f'''\
@needs:path-b
Feature: Checks judged together on the twin
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node
    And within 3 agent ticks the NVML power limits of all GPUs are "{OLD}" in any GPU order
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to 310 W

  @id:J1
  Scenario: the caps before and after a tick, one after the other
    Then within 2 agent ticks the NVML power limits of all GPUs are "{OLD}" in any GPU order
    And within 2 agent ticks the NVML power limits of all GPUs are "{NEW}" in any GPU order

  @id:J2
  Scenario: the caps after a tick, then the caps before and after it, together
    Then within 2 agent ticks all of these hold together:
      """
      the NVML power limits of all GPUs are "{NEW}" in any GPU order
      """
    And within 2 agent ticks all of these hold together:
      """
      the NVML power limits of all GPUs are "{OLD}" in any GPU order
      the NVML power limits of all GPUs are "{NEW}" in any GPU order
      """

  @id:J3
  Scenario: the new caps and the annotation that asked for them, together
    Then within 2 agent ticks all of these hold together:
      """
      the power-limit annotation of pod "vllm-dgd-c-decode" is 310 W
      the NVML power limits of all GPUs are "{NEW}" in any GPU order
      """
    And throughout 2 agent ticks all of these hold together:
      """
      the power-limit annotation of pod "vllm-dgd-c-decode" is 310 W
      the NVML power limits of all GPUs are "{NEW}" in any GPU order
      """
'''

YAML = f'''\
id: J4
title: The caps before and after a tick, together, in YAML
needs: [path-b]
steps:
  - agent_running
  - topology
  - expect: {{within: 3 ticks, all: [nvml_caps: {{caps: "{OLD}"}}]}}
  - annotate: {{pod: vllm-dgd-c-decode, watts: 310 W}}
  - expect:
      within: 2 ticks
      together:
        - nvml_caps: {{caps: "{OLD}"}}
        - nvml_caps: {{caps: "{NEW}"}}
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> CatalogRun:
    """Both files in one run on one twin (a folder of their own: every scenario file under it runs)."""
    folder = tmp_path_factory.mktemp("joint")
    (folder / "joint.feature").write_text(FEATURE, encoding="utf-8")
    (folder / "joint.yaml").write_text(YAML, encoding="utf-8")
    return run_catalog("-o", f"stepgraph_paths={folder}", "--target-option", "world=path-b", files=(str(folder),))


def test_checks_that_hold_at_different_moments_pass_in_turn_and_fail_together(run: CatalogRun) -> None:
    assert set(run.outcomes) == {"J1", "J2", "J3", "J4"}, run.output
    assert run.outcomes["J1"]["outcome"] == "passed", run.outcomes["J1"]["text"]
    # the same header twice, over two doc strings: the second one fails, with its own checks
    assert run.outcomes["J2"]["outcome"] == "failed", run.output
    failure = run.outcomes["J2"]["text"]
    assert "joint.feature:20:5: And within 2 agent ticks all of these hold together:" in failure
    assert "1 of the 2 checks judged together did not hold" in failure
    assert "✗ nvml.caps_multiset (joint.feature:22:7)" in failure and "✓ nvml.caps_multiset (joint.feature:23:7) held" in failure
    assert run.outcomes["J4"]["outcome"] == "failed", run.output
    failure = run.outcomes["J4"]["text"]
    assert "2 checks together within 2 agent ticks: still failing after 30 s" in failure
    assert "✗ nvml.caps_multiset (joint.yaml:12:11)" in failure and "✓ nvml.caps_multiset (joint.yaml:13:11) held" in failure
    assert "it held at +0 s, when the others did not all hold" in failure  # the old caps, before the tick


def test_checks_that_hold_at_one_moment_pass_together(run: CatalogRun) -> None:
    assert run.outcomes["J3"]["outcome"] == "passed", run.outcomes["J3"]["text"]
