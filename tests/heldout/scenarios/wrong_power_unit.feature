@design:C1 @needs:path-b
Feature: A power written with a lower-case unit
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-E1
  Scenario: Lower-case watts
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to 310 w
    Then within 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, 310×2" in any GPU order
