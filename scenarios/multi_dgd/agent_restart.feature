@design:C3
Feature: After a crash, the new agent restores only the idle GPUs the old one capped
  A crashed agent restores nothing; its successor restores a GPU at start-up only if the GPU is
  in the persisted managed set and runs no compute process. Idle GPUs keep their caps while an
  agent runs (it writes busy GPUs only), so a DGD that left while the agent ran leaves its caps
  behind until the next agent start.

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node
    And within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order

  @id:C3-a
  Scenario: With every workload running, a restarted agent restores no GPU
    Given a baseline of the cap writes to every GPU as "w0"
    When the Power Agent crashes and its DaemonSet starts a new one
    Then within 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    And every GPU received exactly 1 cap writes since "w0"

  @id:C3-b
  Scenario: One DGD gone, only its GPUs are restored
    When the worker pods of "vllm-dgd-b" are deleted
    And we wait 1 agent tick
    Then the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    When the Power Agent crashes and its DaemonSet starts a new one
    Then within 1 agent tick the NVML power limits of all GPUs are "350, 325, 300×2, 400×4" in any GPU order

  @id:C3-c
  Scenario: Every DGD gone, all eight GPUs are restored
    When the worker pods of "vllm-dgd-a" are deleted
    And the worker pods of "vllm-dgd-b" are deleted
    And the worker pods of "vllm-dgd-c" are deleted
    And the Power Agent crashes and its DaemonSet starts a new one
    Then within 1 agent tick the NVML power limits of all GPUs are "400×8" in any GPU order
