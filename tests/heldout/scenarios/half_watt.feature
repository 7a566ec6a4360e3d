@design:C1 @needs:path-b
Feature: An annotation limit that is not whole watts
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-E3
  Scenario: Half a watt
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to 310500 mW
    Then within 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, 310×2" in any GPU order
