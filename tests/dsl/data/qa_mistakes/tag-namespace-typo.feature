@desing:8.5.7
Feature: QA mistake
  Scenario: S
    Given the Power Agent is running on the test node
