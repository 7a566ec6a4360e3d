Feature: Caps
  Scenario: Caps hold
    Given the Power Agent is running on the test node
  Scenario Outline: Caps hold
    When we wait <n> s
    Examples:
      | n |
      | 1 |
