"""`--world NAME|FILE` and the ini option `stepgraph_world` → the twin target's `world` option.

Sugar for `--target-option world=…`, so the everyday command can name a world the way the brief
spells it; an explicit `--target-option world=…` wins. Relative world files in the ini option are
read from the rootdir.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("stepgraph_world", "twin world: a profile of examples/profiles or a world file (for --target twin)", default="")
    parser.getgroup("stepgraph").addoption(
        "--world", dest="stepgraph_world", default=None, metavar="NAME|FILE",
        help="twin world: a profile (path-b, path-b-dcgm, path-a) or a world file; same as --target-option world=…",
    )


def pytest_configure(config: pytest.Config) -> None:
    world = config.getoption("stepgraph_world")
    if not world and (ini := config.getini("stepgraph_world")):
        world = str(config.rootpath / ini) if ini.endswith((".yaml", ".yml")) and not Path(ini).is_absolute() else ini
    options = getattr(config.option, "stepgraph_target_options", None)
    if world and options is not None and not any(o.startswith("world=") for o in options):
        options.append(f"world={world}")
