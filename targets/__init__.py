"""Targets: the composition root that wires a cluster (the twin, or a live one) into the runtime.

PYTEST_DONT_REWRITE: as every module of stepgraph (see stepgraph.dsl.assert_rewriting); said here
too because an editable install marks this package, and a second pytest run in one process would
otherwise warn that it is imported already and cannot be rewritten.
"""

# One identity: this folder is the package stepgraph.targets. Imported by its folder name (say
# `import targets` from the checkout) it would be a second copy with its own registries and state.
if __name__ != "stepgraph.targets":
    raise ImportError(f"targets/ is the package stepgraph.targets; import it by that name, not as {__name__!r}")

