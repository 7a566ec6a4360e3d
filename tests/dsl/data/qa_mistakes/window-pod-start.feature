Feature: QA mistake
  Scenario: S
    Then within 1 s 1 pods matching "app=x" are running on the test node
