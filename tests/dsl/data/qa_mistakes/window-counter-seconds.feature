Feature: QA mistake
  Scenario: S
    Given a baseline of the Power Agent counters as "c0"
    Then within 10 s the counter "multi_pod_gpu_total" grew by at least 1 since "c0"
