"""Step libraries; they use only stepgraph.dsl's public step API."""
