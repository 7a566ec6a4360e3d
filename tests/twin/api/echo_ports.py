"""What the streaming tests share: a real-clock twin whose `echo-ports` image runs the small
program in programs/ (it listens on the ports its command line names), and a real-time poll."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException

from stepgraph.twin import NodeConfig
from stepgraph.twin.process.runtime import ContainerMatch, Program

PROGRAMS = Path(__file__).with_name("programs")

# The api conftest's `twin` fixture reads this marker: the program's time is real time, and pods
# start at once.
REAL_CLOCK_TWIN = pytest.mark.twin(clock="real", node=NodeConfig(startup_delay=0.0))


def serve_echo_ports(twin) -> None:
    """Containers of `echo-ports:*` images run programs/ (mounted at /app) as real processes."""
    twin.processes.register(twin.workloads, "echo-ports", ContainerMatch(image="echo-ports"),
                            Program(root=PROGRAMS, mount="/app"))


def until(check, what: str, timeout: float = 20.0):
    """Poll `check` in real time (the program runs in it) until it is truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if result := check():
                return result
        except ApiException:
            pass  # e.g. the log of a container still being created
        time.sleep(0.02)
    raise AssertionError(f"{what} did not happen within {timeout} s")
