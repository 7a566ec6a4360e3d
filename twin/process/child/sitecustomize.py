"""Start-up hook of a twin process container: gives the program the node's view, then hands over
to the machine's own `sitecustomize` (if any), which this module would otherwise shadow."""

import importlib.machinery
import importlib.util
import os
import sys

import _stepgraph_ports
import _stepgraph_view

_stepgraph_view.install()
_stepgraph_ports.install()  # the pod's own port space (the kubelet's process mode sets its table)

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here])
if _spec is not None and _spec.loader is not None:
    _next = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_next)
