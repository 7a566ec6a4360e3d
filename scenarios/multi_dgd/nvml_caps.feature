@id:NVML-CAPS @design:8.5.6 @design:8.6.1 @design:B2
Feature: NVML per-GPU power limits prove the caps were written to the driver
  The only proof that a cap reached the GPU is the driver's own reading: the NVML power limit
  of each GPU, read inside the agent pod. Compared as a multiset (Finding #8). In the DCGM pass
  (§8.6.1) it reads, through NVML, the caps the agent wrote through DCGM.

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario: The NVML power limits of the eight GPUs match the topology
    Then within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
