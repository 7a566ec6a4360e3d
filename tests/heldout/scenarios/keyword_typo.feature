@design:8.5.6
Feature: A keyword misspelt on the first step

  @id:QA-E5
  Scenario: The driver holds the topology's caps
    Givn the Power Agent is running on the test node
    When the multi-DGD topology is running on the test node
    Then within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
