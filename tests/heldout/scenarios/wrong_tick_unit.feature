@design:C1 @needs:path-b
Feature: A duration with a misspelt unit
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-E2
  Scenario: Ticks misspelt
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to 310 W
    Then within 2 tiks the NVML power limits of all GPUs are "350, 325×3, 375×2, 310×2" in any GPU order
