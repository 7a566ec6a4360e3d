Feature: QA mistake
  Scenario: S
    Given a baseline of the NVML power limit of every GPU as "caps0"
    Then the counter "multi_pod_gpu_total" did not change since "caps0"
