"""Fixtures for process containers: a real-clock twin and a tiny local program standing in for an
image; `rig`, one node's real parts with a process view over them."""

from __future__ import annotations

import pytest
from kubernetes import client
from process_rig import TINY
from view_rig import ViewRig

from stepgraph.twin import NodeConfig, Twin
from stepgraph.twin.process.runtime import ContainerMatch, Program


@pytest.fixture
def rig(tmp_path):
    rig = ViewRig(tmp_path)
    yield rig
    rig.close()


@pytest.fixture
def twin():
    """A twin on the real clock (a program's time is real time), pods start at once."""
    with Twin(clock="real", node=NodeConfig(startup_delay=0.0)) as t:
        yield t


@pytest.fixture
def core(twin):
    api = twin.api_client()
    try:
        yield client.CoreV1Api(api)
    finally:
        api.close()


@pytest.fixture
def tiny(twin) -> Program:
    """`tiny:*` images run tests/twin/process/tiny_program.py, the image's folder mounted at /app."""
    program = Program(root=TINY.parent, mount="/app", entrypoint=("python3", "/app/tiny_program.py"))
    twin.processes.register(twin.workloads, "tiny", ContainerMatch(image="tiny"), program)
    return program
