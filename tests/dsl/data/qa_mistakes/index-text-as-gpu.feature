Feature: QA mistake
  Scenario: S
    Given the value "3" is bound as "gpu"
    Then the NVML power limit of GPU "gpu" is 280 W
