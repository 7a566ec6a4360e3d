"""Targets: the composition root that wires a cluster (the twin, or a live one) into the runtime."""
