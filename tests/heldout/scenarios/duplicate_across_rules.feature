@design:8.5.6
Feature: One scenario name used in two rules
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Rule: NVML
    @id:QA-E10
    Scenario: The caps hold
      Then within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order

  Rule: The gauge
    @id:QA-E11
    Scenario: The caps hold
      Then within 3 agent ticks the applied-limit gauge reads "350, 325×3, 375×2, 300×2" in any GPU order
