"""Step libraries; they use only stepgraph.dsl's public step API."""

# One identity: this folder is the package stepgraph.steps. Imported by its folder name (say
# `import steps` from the checkout) it would be a second copy with its own registries and state.
if __name__ != "stepgraph.steps":
    raise ImportError(f"steps/ is the package stepgraph.steps; import it by that name, not as {__name__!r}")

