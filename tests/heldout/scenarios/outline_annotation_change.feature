@design:C1 @needs:path-b
Feature: A changed annotation reaches exactly its worker's GPUs on the next tick
  Path B: the stub worker's annotation is ours to change (no planner writes it back).

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-O1
  Scenario Outline: The aggregated DGD's decode worker is re-annotated to <watts>
    Given within 3 agent ticks the NVML power limits of all GPUs are "350, 325×3, 375×2, 300×2" in any GPU order
    When the power-limit annotation of pod "vllm-dgd-c-decode" is set to <watts>
    Then within 1 agent tick the NVML power limits of all GPUs are "350, 325×3, 375×2, <limit>×2" in any GPU order

    @fast
    Examples: lowered
      | watts     | limit |
      | 290 W     | 290   |
      | 310000 mW | 310   |

    @slow
    Examples: raised
      | watts | limit |
      | 340 W | 340   |
