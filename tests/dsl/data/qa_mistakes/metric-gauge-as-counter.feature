Feature: QA mistake
  Scenario: S
    Given a baseline of the Power Agent counters as "c0"
    Then within 2 agent ticks the counter "applied_limit_watts" grew by at least 1 since "c0"
