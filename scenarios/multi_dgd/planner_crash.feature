@id:E1 @design:E1 @needs:path-a
Feature: One planner crashing disturbs neither the other tenants nor its own DGD's caps
  DGD B's planner is killed; over the ticks that follow, the agent keeps writing every tenant's
  cap — B's workers keep the annotations their planner wrote — and no write fails.

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario: With DGD B's planner gone, every GPU keeps its tenant's cap over two ticks
    Given within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    And a baseline of the Power Agent counters as "c0"
    When the planner of "vllm-dgd-b" crashes
    Then throughout 2 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    And the counter "apply_failures_total" did not change since "c0"
    And the counter "safe_default_applied_total" did not change since "c0"
