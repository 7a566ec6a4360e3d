Feature: QA mistake
  Scenario: S
    Given a baseline of the Power Agent counters as "c0"
    When we wait 1 agent tick
    Then the counter "multi_pod_gpu_totl" did not change since "c0"
