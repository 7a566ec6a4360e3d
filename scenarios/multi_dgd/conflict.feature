@id:B5 @design:8.5.7 @design:B5
Feature: A multi-pod conflict falls back to the safe default on the assigned GPU only
  A bystander pod that claims no GPU sees all of them, opens a CUDA context on the first one
  and carries an annotation (200 W) that disagrees with the worker already on that GPU. The
  agent must count the conflict, put that one GPU at the safe default (280 W) and leave the
  other seven alone; deleting the bystander restores the GPU's topology cap on the next tick.

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario: Conflict → safe default on one GPU, blast radius zero, recovery after the bystander goes
    Given within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    And a baseline of the Power Agent counters as "c0"
    And a baseline of the NVML power limit of every GPU as "caps0"
    And a baseline of the compute processes on every GPU as "pids0"
    When a bystander pod annotated 200 W opens a CUDA context without claiming a GPU, as "bystander"
    Then within 90 s exactly one GPU has a compute process not in "pids0", bound as "gpu"
    And within 2 agent ticks the counter "multi_pod_gpu_total{disposition=conflict}" grew by at least 1 since "c0"
    And within 2 agent ticks the counter "safe_default_applied_total" grew by at least 1 since "c0"
    And within 2 agent ticks the NVML power limit of GPU "gpu" is 280 W
    And the NVML power limit of every GPU other than "gpu" equals "caps0"
    When the objects "bystander" are deleted
    Then within 2 agent ticks the NVML power limit of every GPU equals "caps0"
