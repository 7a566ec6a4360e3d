Feature: Annotations per row
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario Outline: Re-annotated to <watts>
    When the power-limit annotation of pod "<pods>" is set to <watts>

    Examples:
      | pod               | watts |
      | vllm-dgd-c-decode | 310 W |
