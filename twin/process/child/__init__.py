"""Modules a child program imports from its PYTHONPATH: the start-up hook and the DCGM bindings.

Nothing here is imported by the twin itself; the folder is put first on a process container's
PYTHONPATH by `stepgraph.twin.process.view`.
"""
