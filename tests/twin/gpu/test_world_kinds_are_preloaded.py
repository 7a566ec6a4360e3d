"""The API server's checks that `stepgraph run` builds before it forks its worlds (the twin
target's preload) are those of every built-in kind a world writes: a world that wrote another
kind would build that kind's check in each forked world again, as if nothing were preloaded."""

from __future__ import annotations

from e2e_rig import Cluster

from stepgraph.twin.apiserver import schemas


def test_a_world_and_its_workers_need_no_check_the_preload_did_not_build():
    schemas._compiled.cache_clear()  # as in a new process: this one's earlier tests built checks too
    schemas.preload()
    built = schemas._compiled.cache_info().currsize
    for world in ("path-b", "path-a-dcgm"):
        cluster = Cluster(world)
        try:
            if world == "path-b":
                cluster.apply_stubs()
            cluster.sleep(45)  # scheduled, started, capped; the planners' and operator's writes
        finally:
            cluster.close()
    assert schemas._compiled.cache_info().currsize == built, (
        "a world wrote a kind that schemas.WORLD_KINDS does not list: add it")
