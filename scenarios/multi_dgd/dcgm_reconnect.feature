@id:B7 @design:B7 @needs:path-b
Feature: A dropped DCGM connection is rebuilt once and the caps still land
  Every DCGM Set of the next reconcile loses the hostengine connection once; the agent must
  reconnect, rebuild its groups and identity map, retry, and so still land a changed cap, with
  neither failure counter moving. Path B: the changed cap is a stub worker's annotation.

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario: A changed cap lands through a reconnect on every GPU
    Given within 3 agent ticks the DCGM current power limits are "350, 325×3, 375×2, 300×2" in any GPU order
    And a baseline of the Power Agent counters as "c0"
    And the fault "dcgm_set_connection_lost_gpus" is set to "[0, 1, 2, 3, 4, 5, 6, 7]"
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to 310 W
    Then within 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, 310×2" in any GPU order
    And the counter "apply_failures_total" did not change since "c0"
    And the counter "dcgm_enforce_failures_total" did not change since "c0"
