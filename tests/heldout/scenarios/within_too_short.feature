@design:8.5.6
Feature: A window shorter than an agent tick
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-W1
  Scenario: Caps checked within two seconds
    Then within 2 s the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
