"""The runner image on a twin: its containers run this machine's stepgraph as a real process.

A fleet run against a twin then goes end to end as on a cluster — one Job per node, the runner
pod started by the twin's kubelet as a process container (`twin/process`), `stepgraph fleet node`
inside it reaching the API server through its in-cluster config and service-account token
(authorised by the RBAC the fleet run created), its results read back from the pod log. The
folder `root` stands for the image's `/app` (the Dockerfile's WORKDIR, holding the scenarios),
and the image's `PATH` finds this interpreter's `stepgraph` first, as `pip install .` in the
image puts it on its `PATH`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from stepgraph.twin.process.runtime import ContainerMatch, Program

RUNNER_IMAGE = "stepgraph-runner"


def serve_runner_image(twin: Any, root: Path, image: str = RUNNER_IMAGE) -> None:
    """Run every container of `image` (any tag) on `twin` as the Dockerfile's image would run."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")])
    program = Program(root=Path(root), mount="/app", entrypoint=("stepgraph",), cmd=("fleet", "node"),
                      env=(("PATH", path), ("PYTHONUNBUFFERED", "1")))
    twin.processes.register(twin.workloads, "stepgraph-runner", ContainerMatch(image=image), program)
