"""Instructions (not seconds) the twin spends on its controllers' work: a deterministic figure on a busy machine.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \\
        --callgrind-out-file=/dev/null .venv/bin/python bench/twin_instructions.py [WORLD] [CYCLES]

Starts a world's twin (default path-a), lets it settle (the agent, the operator, the DGDs' pods
running), then runs CYCLES times (default 3): delete every DGD of the world, 60 virtual seconds,
create them again, 90 virtual seconds — the operator, scheduler, kubelet, garbage collector,
Events, agent and planner ticks, all through the in-process store, as a catalog scenario's
set-up and teardown drive them. The cycles run inside `functools.reduce`, so callgrind counts
only them (`--toggle-collect`); valgrind prints the count as `Collected`. Wall and CPU time on a
shared 2-core machine swing ±30 % between identical runs; this count moves by a few hundredths
of a percent. To compare two trees, run it under each (PYTHONPATH to the other tree's package).
"""

from __future__ import annotations

import functools
import sys

from stepgraph.twin import world_objects
from stepgraph.twin.planners import DGD_RESOURCE
from stepgraph.twin.world import load_world, profile
from stepgraph.twin.world_install import build_twin


def main(argv: list[str]) -> int:
    world = load_world(profile(argv[0] if argv else "path-a"))
    cycles = int(argv[1]) if len(argv) > 1 else 3
    if not world.dgds:
        raise SystemExit(f"world {world.name} has no DGDs to cycle (use path-a or path-a-dcgm)")
    twin = build_twin(world).start()
    twin.clock.sleep(120)

    def cycle(_done: object = None, _n: object = None) -> None:
        for dgd in world.dgds:
            twin.store.delete(DGD_RESOURCE, world.namespace, dgd.name)
        twin.clock.sleep(60)
        for dgd in world.dgds:
            twin.store.create(DGD_RESOURCE, world.namespace, world_objects.dgd(dgd, world))
        twin.clock.sleep(90)

    try:
        cycle()  # the first one outside the count: caches and first-use imports
        functools.reduce(cycle, range(cycles), None)
    finally:
        twin.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
