Feature: QA mistake
  Scenario: S
    Given a baseline of the Power Agent counters as "c0"
    Then the counter "multi_pod_gpu_total{dispositon=conflict}" did not change since "c0"
