@id:A4 @design:A4 @needs:path-a
Feature: A foreign overwrite of a worker's annotation is patched back by its own planner
  Only the DGD's own planner writes its workers' annotations; when another writer puts DGD B's
  prefill value on DGD A's prefill worker, A's planner restores 350 on its next pass.

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  Scenario: DGD A's prefill worker returns to 350 W after being overwritten with 375 W
    Given within 1 planner tick the worker pods carry the power limits "vllm-dgd-a/prefill=350, vllm-dgd-a/decode=325, vllm-dgd-b/prefill=375, vllm-dgd-b/decode=325, vllm-dgd-c/decode=300"
    When the power-limit annotation of the prefill worker of "vllm-dgd-a" is set to 375 W
    Then within 150 s the worker pods carry the power limits "vllm-dgd-a/prefill=350, vllm-dgd-a/decode=325, vllm-dgd-b/prefill=375, vllm-dgd-b/decode=325, vllm-dgd-c/decode=300"
