"""An example step library that lives outside stepgraph and uses only its public API."""
