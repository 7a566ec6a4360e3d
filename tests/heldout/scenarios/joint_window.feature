@design:C1 @needs:path-b
Feature: A changed annotation and the caps it asks for, judged together in one window
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-J1
  Scenario: The annotation, the driver and the gauge agree at once, and keep agreeing
    Given within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to 290000 mW
    Then within 2 agent ticks all of these hold together:
      """
      the power-limit annotation of pod "vllm-dgd-c-decode" is 290 W
      the NVML power limits of all GPUs are "350, 325×3, 375×2, 290×2" in any GPU order
      """
    And throughout 2 agent ticks all of these hold together:
      """
      the NVML power limits of all GPUs are "350, 325×3, 375×2, 290×2" in any GPU order
      the applied-limit gauge reads "350, 325×3, 375×2, 290×2" in any GPU order
      """

  @id:QA-J2
  Scenario: Deliberately red — the new caps and the old annotation are never seen together
    Given within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to 310 W
    Then within 2 agent ticks all of these hold together:
      """
      the NVML power limits of all GPUs are "350, 325×3, 375×2, 310×2" in any GPU order
      the power-limit annotation of pod "vllm-dgd-c-decode" is 300 W
      """
