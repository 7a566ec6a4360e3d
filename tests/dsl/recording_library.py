"""The start of the step library that pytester runs load: `log` appends what a step received to the
file named by $REC_LOG, so a test reads back which call each step got; `Rows` is a typed data table."""

RECORDING_LIBRARY = '''
from __future__ import annotations

import os
from pathlib import Path

from stepgraph.dsl import REGISTRY, Params, Power, StepContext


def log(line: str) -> None:
    with Path(os.environ["REC_LOG"]).open("a") as f:
        f.write(line + "\\n")


class Row(Params):
    gpu: int
    limit: Power


class Rows(Params):
    rows: list[Row]
'''
