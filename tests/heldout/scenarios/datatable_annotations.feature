@design:A1 @design:A2
Feature: Worker annotations written as a data table
  Background:
    Given the Power Agent is running on the test node
    And the multi-DGD topology is running on the test node

  @id:QA-DT1
  Scenario: Every worker carries its DGD's limit for its role
    Then within 1 planner tick the worker pods carry the power limits:
      | dgd        | role    | watts |
      | vllm-dgd-a | prefill | 350   |
      | vllm-dgd-a | decode  | 325   |
      | vllm-dgd-b | prefill | 375   |
      | vllm-dgd-b | decode  | 325   |
      | vllm-dgd-c | decode  | 300   |
