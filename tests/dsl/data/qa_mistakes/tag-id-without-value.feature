@id
Feature: QA mistake
  Scenario: S
    Given the Power Agent is running on the test node
