@design:C1 @needs:path-b
Feature: A window that must hold throughout sees a change inside it
  Deliberately red: the annotation changes, so the old caps cannot hold for two ticks.

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-T1
  Scenario: The old caps do not hold throughout two ticks after the annotation changed
    Given within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to 310 W
    Then throughout 2 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
