@id:C2 @design:C2
Feature: Stopping the agent restores every GPU it capped, whichever DGD owned it
  The agent is uninstalled from the node (its DaemonSet places no pod), so its pod gets SIGTERM
  and must put all eight GPUs back at their default before it exits. There is no agent pod to
  read NVML through afterwards, so the reading comes from a one-off probe pod.

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario: After SIGTERM all eight GPUs read back at their default; reinstalled, the caps return
    Given within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    When the Power Agent is stopped
    Then with no Power Agent running, every GPU reads back at its default NVML power limit
    When the Power Agent is started again
    Then within 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
