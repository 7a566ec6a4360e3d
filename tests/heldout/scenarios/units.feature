@design:C1 @needs:path-b
Feature: Units — a limit in milliwatts, windows in ms, s, min and ticks
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-U1
  Scenario: A limit given in milliwatts lands as whole watts
    Given within 1 min the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    And the time is noted as "t0"
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to 310000 mW
    And we wait 500 ms
    Then within 15000 ms the NVML power limits of all GPUs are "350, 325×3, 375×2, 310×2" in any GPU order
    And throughout 30 s the NVML power limits of all GPUs are "350, 325×3, 375×2, 310×2" in any GPU order
    And the power-limit annotation of pod "vllm-dgd-c-decode" is 310 W
    And within 1 agent tick at least 30 s passed since "t0"
