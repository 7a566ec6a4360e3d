@design:C1 @needs:path-b
Feature: A window put on an action
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-E8
  Scenario: An annotation set within a tick
    When within 1 agent tick the power-limit annotation of pod "vllm-dgd-c-decode" is set to 310 W
    Then within 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, 310×2" in any GPU order
