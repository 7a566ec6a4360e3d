"""Teardown that verifies: after a run nothing it created is left and every GPU is at its default
limit; a restore that fails fails the run (the seed printed "all GPUs at default" regardless)."""

from __future__ import annotations

import pytest
from catalog_runs import FAULTED, run_catalog, world_runs
from kubernetes import client
from twin_fault_flips import FlipBeforeTeardown

from stepgraph.targets.twin import TeardownError, TwinTarget


@pytest.mark.parametrize("world", ["path-b-nvml", "path-a-nvml", "path-a-dcgm"])
def test_a_clean_catalog_run_leaves_nothing_and_every_gpu_at_default(world: str) -> None:
    # The twin target checks at stop and fails the run otherwise (see the next tests).
    run = world_runs()[world]
    assert run.returncode == 0, run.output[-3000:]
    assert "did not clean up" not in run.output and not run.ids("error")


@pytest.mark.parametrize("world", FAULTED)
def test_the_catalog_passes_at_a_10_percent_api_fault_rate_and_leaves_nothing(world: str) -> None:
    run = world_runs()[world]  # made at the API fault rate (catalog_runs.FAULTED)
    assert run.returncode == 0, f"{world}: {run.output[-3000:]}"
    assert not run.ids("failed") and not run.ids("error")
    assert run.cleanup.endswith("nothing left behind") and "run-end check" in run.cleanup, run.cleanup


def test_a_failed_gpu_restore_fails_the_run_and_names_the_gpus() -> None:
    deny_writes = FlipBeforeTeardown({"nvml_no_permission": True})
    run = run_catalog("--target-option", "world=path-b", files=("nvml_caps.feature",), plugins=(deny_writes,))
    assert run.returncode == 1, run.output[-3000:]
    assert "restoring every GPU to its default power limit failed" in run.output
    assert "FAILED" in run.output
    assert "the run did not clean up after itself" in run.output
    assert "is at 3" in run.output and "not its default 400 W" in run.output


def test_target_stop_lists_objects_left_behind_and_gpus_off_default() -> None:
    target = TwinTarget(env={})
    session = target.start({})
    core = client.CoreV1Api(target.twin.api_client())
    core.create_namespaced_config_map(session.facts["namespace"], {"metadata": {"name": "forgotten"}})
    target.twin.gpu.devices.board.gpus[3].set_limit_mw(300_000)  # a cap nobody restored
    with pytest.raises(TeardownError) as failure:
        target.stop(session)
    assert "configmaps forgotten was created by the run and is still there" in str(failure.value)
    assert "GPU 3 is at 300 W, not its default 400 W" in str(failure.value)
    assert target.twin is None  # the twin is stopped even when the check fails


def test_a_topology_that_cannot_come_up_fails_and_still_cleans_up(tmp_path) -> None:
    # Four GPUs for 1+1+2+2+2 claims: some stubs stay Pending, so bring-up times out.
    world = tmp_path / "four-gpus.yaml"
    world.write_text("name: four-gpus\nnodes:\n  - {name: twin-gpu-node, gpus: 4, sku: A100-SXM4-80GB}\n")
    run = run_catalog("--target-option", f"world={world}", files=("nvml_caps.feature",))
    assert run.returncode == 1, run.output[-3000:]
    result = run.outcomes["NVML-CAPS"]
    assert result["outcome"] == "failed"
    assert "expected: 5 running" in result["text"] and "Pending" in result["text"]
    assert "did not clean up" not in run.output and "cleaning up after the failed bring-up" not in run.output
