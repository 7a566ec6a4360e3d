@design:B5
Feature: Conflicts and the steady state, one rule each
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @conflict
  Rule: A conflicting bystander affects only the GPU it lands on
    Background:
      Given within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
      And a baseline of the Power Agent counters as "c0"
      And a baseline of the NVML power limit of every GPU as "caps0"
      And a baseline of the compute processes on every GPU as "pids0"

    @id:QA-R1 @design:8.5.7
    Scenario: The bystander's GPU drops to the safe default and the conflict is counted
      When a bystander pod annotated 200 W opens a CUDA context without claiming a GPU, as "bystander"
      Then within 90 s exactly one GPU has a compute process not in "pids0", bound as "gpu"
      And within 2 agent ticks the NVML power limit of GPU "gpu" is 280 W
      And within 2 agent ticks the counter "multi_pod_gpu_total{disposition=conflict}" grew by at least 1 since "c0"

    @id:QA-R2
    Scenario: The other seven GPUs never waver while the bystander lives
      When a bystander pod annotated 200 W opens a CUDA context without claiming a GPU, as "bystander"
      Then within 90 s exactly one GPU has a compute process not in "pids0", bound as "gpu"
      And throughout 3 agent ticks the NVML power limit of every GPU other than "gpu" equals "caps0"
      When the objects "bystander" are deleted
      Then within 2 agent ticks the NVML power limit of every GPU equals "caps0"

  @steady
  Rule: A healthy node counts nothing
    Background:
      Given within 3 agent ticks the applied-limit gauge reads "350, 325×3, 375×2, 300×2" in any GPU order
      And a baseline of the Power Agent counters as "c1"

    @id:QA-R3 @design:D3
    Scenario: No warning counter moves over three ticks
      Then throughout 3 agent ticks the counter "safe_default_applied_total" did not change since "c1"
      And the counter "apply_failures_total" did not change since "c1"
      And the counter "multi_pod_gpu_total" did not change since "c1"
