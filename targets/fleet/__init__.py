"""`stepgraph fleet run`: the catalog on every matching node of a cluster at once, as one Kubernetes
Job per node running stepgraph in-cluster against its node; results come back through pod logs."""
