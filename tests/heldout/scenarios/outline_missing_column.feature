@design:C1 @needs:path-b
Feature: Outline placeholders that no Examples column fills
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-E9
  Scenario Outline: Re-annotated to <watts>
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to <watt>
    Then within 1 agent tick the power-limit annotation of pod "<pods>" is <watts>

    Examples:
      | pod               | watts |
      | vllm-dgd-c-decode | 310 W |
