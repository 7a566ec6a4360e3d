@demo
Feature: Demo — bindings, snapshots and waiting on the target clock
  Scenarios that need no cluster: they run on every target, the built-in `local` one included.

  Background:
    Given the time is noted as "t0"

  @id:DEMO-1
  Scenario: A bound list matches another in any order
    Given the list "gpu-0, gpu-1, gpu-1" is bound as "assigned"
    And the list "gpu-1, gpu-0, gpu-1" is bound as "expected"
    And a snapshot of "assigned" is taken as "before"
    Then "assigned" has the same elements as "expected"
    And "before" equals "assigned"

  @id:DEMO-2
  Scenario: A check retried within agent ticks returns once it holds
    Given the value "ready" is bound as "state"
    When we wait 1 agent tick
    Then within 2 agent ticks at least 20 s passed since "t0"
    And "state" is "ready"
    And throughout 1 agent tick "state" is "ready"
