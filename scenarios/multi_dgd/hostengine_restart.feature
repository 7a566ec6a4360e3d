@id:E3 @design:E3 @needs:dcgm
Feature: A hostengine restart loses no cap and sends no GPU through the safe default
  The hostengine is killed and its DaemonSet starts a fresh one: every connection, group and
  target is gone. The agent's next reconcile reconnects, re-creates its groups and re-applies
  every cap; no GPU passes through the safe default and no write fails.

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario: After a hostengine restart DCGM holds every cap again, current and target
    Given within 3 agent ticks the DCGM current power limits are "350, 325×3, 375×2, 300×2" in any GPU order
    And a baseline of the Power Agent counters as "c0"
    When the hostengine restarts
    Then within 2 agent ticks the DCGM target power limits are "350, 325×3, 375×2, 300×2" in any GPU order
    And the DCGM current power limits are "350, 325×3, 375×2, 300×2" in any GPU order
    And throughout 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    And the counter "safe_default_applied_total" did not change since "c0"
    And the counter "apply_failures_total" did not change since "c0"
