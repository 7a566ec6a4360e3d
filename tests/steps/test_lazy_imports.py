"""Loading the step libraries imports no cluster client: the kubernetes client and urllib3 cost
more to import than a lint or a run without a cluster takes in all, so they come on first use."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("kubernetes", "urllib3")

LOAD_STEP_LIBRARIES = f"""
import sys
from stepgraph.dsl import REGISTRY
REGISTRY.load_entry_points()
assert len(REGISTRY.steps) > 50, len(REGISTRY.steps)
print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))
"""


def test_loading_every_step_library_imports_no_cluster_client() -> None:
    done = subprocess.run([sys.executable, "-c", LOAD_STEP_LIBRARIES], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
