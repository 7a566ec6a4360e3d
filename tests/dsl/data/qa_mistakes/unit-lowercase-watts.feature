Feature: QA mistake
  Scenario: S
    Then the power-limit annotation of pod "p" is 280 w
