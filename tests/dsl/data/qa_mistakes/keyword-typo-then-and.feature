Feature: QA mistake
  Scenario: S
    Givn the Power Agent is running on the test node
    And we wait 1 agent tick
