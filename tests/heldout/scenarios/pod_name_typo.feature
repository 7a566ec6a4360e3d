@design:C1 @needs:path-b
Feature: A pod name misspelt in an action
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-P1
  Scenario: The decode worker of DGD C re-annotated, its name missing a letter
    When the power-limit annotation of pod "vllm-dgd-c-decod" is set to 310 W
    Then within 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, 310×2" in any GPU order
