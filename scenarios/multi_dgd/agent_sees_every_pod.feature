@id:B1 @design:B1
Feature: The agent sees every worker pod on its node, of every DGD
  Five workers of three DGDs share the node; one reconcile must read all five annotations. Every
  GPU capped at its own tenant's value, with no GPU at the safe default, is only possible if the
  agent's pod list held all five pods and its UID → annotation map all five values. The agent
  sees a worker on its GPUs only once the worker has loaded its model and opened its CUDA contexts
  (20 s after it starts on the twin), and its next tick may come up to one tick later: the window
  is three agent ticks, as for every first reading after the topology comes up.

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario: One reconcile caps every GPU from the five annotations of three DGDs
    Given 5 pods matching "nvidia.com/dynamo-component-type=worker,purpose=power-aware-multi-dgd-test" are running on the test node
    And a baseline of the Power Agent counters as "c0"
    Then within 3 agent ticks the applied-limit gauge reads "350, 325×3, 375×2, 300×2" in any GPU order
    And the counter "safe_default_applied_total" did not change since "c0"
    And the counter "k8s_list_failures_total" did not change since "c0"
