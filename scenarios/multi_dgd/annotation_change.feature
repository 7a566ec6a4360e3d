@id:C1 @design:C1 @needs:path-b
Feature: A changed annotation reaches the GPU within one agent tick
  Path B only: on Path A the DGD's planner owns the annotation and would patch it back (A4).

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario: Raising one worker's annotation changes exactly its GPUs' caps on the next tick
    Given within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to 310 W
    Then within 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, 310×2" in any GPU order
