@design:B5
Feature: A GPU index bound as text
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-E6
  Scenario: GPU 3 is read from a text binding
    Given the value "3" is bound as "gpu"
    Then within 3 agent ticks the NVML power limit of GPU "gpu" is 325 W
