Feature: QA mistake
  Scenario: S
