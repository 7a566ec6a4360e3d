Feature: QA mistake
  Scenario: S
    Then within 2 s the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
