"""Fixtures of the GPU-side twin tests (the rig itself lives in `gpu_rig.py`)."""

from __future__ import annotations

import pytest
from gpu_rig import Rig


@pytest.fixture
def rig() -> Rig:
    return Rig()
