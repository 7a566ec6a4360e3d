@id:E2 @design:E2 @needs:path-b
Feature: A restarted worker pod (same name, new UID) gets its cap on the next tick
  The agent attributes GPUs to pods by UID (PID → cgroup → pod UID), never by name. The
  replacement pod carries a different limit, so only a write for the new UID can change the
  GPU's cap (the agent never resets an idle GPU, so the old cap would otherwise remain).

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario: The replacement of a worker pod is capped by its own annotation
    Given within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    When the pod "vllm-dgd-a-prefill" is deleted and created again under the same name, annotated 360 W, as "restart"
    Then the pod "vllm-dgd-a-prefill" has a new UID since "restart"
    And within 1 agent tick the NVML power limits of all GPUs are "360, 325×3, 375×2, 300×2" in any GPU order
