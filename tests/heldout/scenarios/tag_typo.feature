@desing:8.5.6
Feature: A design tag misspelt
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-E4
  Scenario: The driver holds the topology's caps
    Then within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
