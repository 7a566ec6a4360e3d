@design:C1 @needs:path-b
Feature: A check inside a joint window with a window of its own
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-J4
  Scenario: The inner check repeats the window
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to 310 W
    Then within 2 agent ticks all of these hold together:
      """
      the power-limit annotation of pod "vllm-dgd-c-decode" is 310 W
      within 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, 310×2" in any GPU order
      """
