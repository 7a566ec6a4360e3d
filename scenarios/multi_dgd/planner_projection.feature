@id:D2 @design:D2 @needs:path-a
Feature: Each planner projects its own DGD's power, on its own metrics port
  prefill replicas × prefill cap × GPUs per prefill worker + decode replicas × decode cap × GPUs
  per decode worker, for its own DGD only: a 1×350×1 + 1×325×1, b 1×375×2 + 1×325×2, c (agg) 1×300×2.

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario: Three planners, three projections, each from its own DGD's workers
    Given within 1 planner tick the worker pods carry the power limits "vllm-dgd-a/prefill=350, vllm-dgd-a/decode=325, vllm-dgd-b/prefill=375, vllm-dgd-b/decode=325, vllm-dgd-c/decode=300"
    Then the planner of "vllm-dgd-a" projects 675 W against a budget of 800 W
    And the planner of "vllm-dgd-b" projects 1400 W against a budget of 1500 W
    And the planner of "vllm-dgd-c" projects 600 W against a budget of 800 W
    And every planner projects its own DGD's power: its workers' limits × their GPUs
