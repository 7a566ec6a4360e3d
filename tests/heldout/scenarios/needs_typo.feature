@design:8.6.2 @needs:dcgn
Feature: A capability misspelt
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-E7
  Scenario: DCGM current limits
    Then within 3 agent ticks the DCGM current power limits are "350, 325×3, 375×2, 300×2" in any GPU order
