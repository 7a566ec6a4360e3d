"""Targets: the composition root that wires a cluster (the twin, or a live one) into the runtime."""

# One identity: this folder is the package stepgraph.targets. Imported by its folder name (say
# `import targets` from the checkout) it would be a second copy with its own registries and state.
if __name__ != "stepgraph.targets":
    raise ImportError(f"targets/ is the package stepgraph.targets; import it by that name, not as {__name__!r}")

