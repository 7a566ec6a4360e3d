from __future__ import annotations

import pytest
from view_rig import ViewRig


@pytest.fixture
def rig(tmp_path):
    rig = ViewRig(tmp_path)
    yield rig
    rig.close()
