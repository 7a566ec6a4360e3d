@id:X1
Feature: Steps of our own library beside stepgraph's

  Background:
    Given the Power Agent is running on the test node

  Scenario: The agent pod answers exec, and a pod that is not there is NotFound
    Then the pod labelled "app.kubernetes.io/component=power-agent" answers hostname with its own name
    And there is no pod named "no-such-pod"
