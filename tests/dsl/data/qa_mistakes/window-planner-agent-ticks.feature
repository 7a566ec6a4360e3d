Feature: QA mistake
  Scenario: S
    Then within 3 agent ticks the worker pods carry the power limits "vllm-dgd-a/prefill=350"
