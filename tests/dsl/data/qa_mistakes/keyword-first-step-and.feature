Feature: Conflict
  Scenario: The bystander gets the safe default
    And the Power Agent is running on the test node
    When we wait 1 agent tick
