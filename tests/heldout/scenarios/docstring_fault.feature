@design:B7 @needs:path-b
Feature: A fault switch's value given as a doc string
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-DS1
  Scenario: Every DCGM Set loses its connection once and the changed cap still lands
    Given within 3 agent ticks the DCGM current power limits are "350, 325×3, 375×2, 300×2" in any GPU order
    And the fault "dcgm_set_connection_lost_gpus" is set to:
      """
      [0, 1, 2, 3, 4, 5, 6, 7]
      """
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to 310 W
    Then within 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, 310×2" in any GPU order
