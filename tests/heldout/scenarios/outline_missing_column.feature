@design:C1 @needs:path-b
Feature: An outline placeholder that no Examples column fills
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-E9
  Scenario Outline: Re-annotated to <watts>
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to <watt>
    Then within 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, <limit>×2" in any GPU order

    Examples:
      | watts | limit |
      | 310 W | 310   |
