Feature: QA mistake
  background:
    Given the Power Agent is running on the test node

  Scenario: S
    When we wait 1 agent tick
