@design:A1 @design:A2
Feature: Planner annotations — each DGD's workers carry their own DGD's power limit
  Three planners (one per DynamoGraphDeployment) annotate worker pods with
  dynamo.nvidia.com/gpu-power-limit. On Path B the five stub workers carry the
  annotations the planners would write; on Path A the planners write them.

  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:A1-A2 @design:8.5.1
  Scenario: All five worker pods carry the annotation of their DGD and role
    Then within 1 planner tick the worker pods carry the power limits "vllm-dgd-a/prefill=350, vllm-dgd-a/decode=325, vllm-dgd-b/prefill=375, vllm-dgd-b/decode=325, vllm-dgd-c/decode=300"

  @id:A3 @design:8.5.2 @design:A3 @needs:path-a
  Scenario: The aggregated DGD is patched through its decode branch only
    Then within 1 planner tick the DGD "vllm-dgd-c" has exactly one worker pod, of role "decode", annotated 300 W
    And the planner of "vllm-dgd-c" never patched a pod with 375 W

  @id:A2-strict @design:8.5.3 @needs:path-a
  Scenario: No planner patches a pod of another DGD
    Given within 1 planner tick the worker pods carry the power limits "vllm-dgd-a/prefill=350, vllm-dgd-a/decode=325, vllm-dgd-b/prefill=375, vllm-dgd-b/decode=325, vllm-dgd-c/decode=300"
    Then there is one planner pod for each DGD of "vllm-dgd-a, vllm-dgd-b, vllm-dgd-c"
    And every planner patched worker pods of its own DGD only
