Feature: Conflict
  Scenario: The bystander gets the safe default
    Given the Power Agent is running on the test node
    When the manifest "examples/manifests/target/40-conflict-bystandr.yaml" is applied as "bystander"
