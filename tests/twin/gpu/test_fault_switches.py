"""Every fault switch changes behaviour, and the check written for the healthy system catches it.

Model-level here; the switches that live in the cluster plumbing (RBAC, OOM on exec, CDI, GPU
assignment order, exec mangling) are proven end to end in `test_twin_gpu_end_to_end.py`.
"""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from gpu_rig import B200_CAPS, Rig, bad_counter_sums, scrape
from stepgraph.twin.faults import Faults, FaultSwitches, UnknownFault, aiohttp_routes


def b5_world(**faults):
    rig = Rig(faults=Faults(faults))
    rig.topology()
    rig.host.spawn(rig.pods["t-p"]["metadata"]["uid"], ["stray"], gpus=[rig.board.gpus[0].uuid])
    return rig


def b5_check(rig, agent):
    """The B5 assertions: conflict and safe-default counted once, GPU 0 at safe default, others intact."""
    samples = scrape(agent)
    return (samples.get('dynamo_power_agent_multi_pod_gpu_total{disposition="conflict"}', 0) == 1
            and samples.get("dynamo_power_agent_safe_default_applied_total", 0) == 1
            and rig.caps() == {**B200_CAPS, 0: 350})


def test_healthy_agent_passes_the_b5_check():
    rig = b5_world()
    agent = rig.agent(safe=350)
    agent.reconcile_once()
    assert b5_check(rig, agent)


@pytest.mark.parametrize("bug", ["agent_ignores_conflicts", "agent_never_counts", "agent_writes_wrong_gpu"])
def test_agent_bugs_fail_the_b5_check(bug):
    rig = b5_world(**{bug: True})
    agent = rig.agent(safe=350)
    agent.reconcile_once()
    assert not b5_check(rig, agent)


def test_wrong_gpu_bug_breaks_the_per_gpu_topology_but_not_the_multiset():
    rig = Rig(faults=Faults({"agent_writes_wrong_gpu": True}))
    rig.topology()
    agent = rig.agent()
    agent.reconcile_once()
    assert rig.caps() != B200_CAPS
    assert sorted(rig.caps().values()) == sorted(B200_CAPS.values())  # why per-GPU checks matter too


def test_never_restores_bug_leaves_caps_after_sigterm():
    rig = Rig(faults=Faults({"agent_never_restores": True}))
    rig.topology()
    agent = rig.agent()
    agent.reconcile_once()
    agent.handle_sigterm()
    assert rig.caps() == B200_CAPS


@pytest.mark.parametrize(("actuator", "left_behind"), [("dcgm", True), ("nvml", False)])
def test_finding_10_dcgm_uninstall_leaves_caps_only_in_dcgm_mode(actuator, left_behind):
    rig = Rig(faults=Faults({"dcgm_uninstall_leaves_caps": True}))
    rig.topology()
    rig.devices.start_hostengine()
    agent = rig.agent(actuator=actuator)
    agent.reconcile_once()
    agent.handle_sigterm()
    assert (rig.caps() == B200_CAPS) is left_behind
    assert (set(rig.caps().values()) == {1000}) is not left_behind


@pytest.mark.parametrize(("version", "shape"), [("4.4", list), ("4.5", dict)])
def test_finding_9_dcgm_version_switch_flips_the_json_shape_at_run_time(version, shape):
    import json

    rig = Rig()
    engine = rig.devices.start_hostengine()
    conn = engine.connect()
    gid = conn.create_group("dynamo-power-agent-gpu-0")
    conn.add_gpu(gid, 0)
    rig.faults.set("dcgm_version", version)
    out, _, rc = engine.dcgmi(["config", "--get", "-g", str(gid), "-j"])
    assert rc == 0 and isinstance(json.loads(out)["body"], shape)


def test_nvml_no_permission_counts_apply_failures():
    rig = Rig()
    rig.topology()
    agent = rig.agent()
    rig.faults.set("nvml_no_permission", True)
    agent.reconcile_once()
    assert bad_counter_sums(agent)["apply_failures_total"] == 8


def test_unknown_or_mistyped_switch_is_refused():
    faults = Faults()
    with pytest.raises(UnknownFault):
        faults.set("agent_is_evil", True)
    with pytest.raises(ValueError):
        faults.set("dcgm_version", "3.3")
    with pytest.raises(UnknownFault):
        faults.update({"agent_never_counts": True, "typo": 1})
    assert faults.agent_never_counts is False  # atomic: nothing applied


def test_every_switch_is_documented():
    assert all(len(text) > 20 for text in Faults.describe().values())
    assert set(Faults.describe()) == set(FaultSwitches.model_fields)


def test_http_endpoint_reads_flips_and_resets_switches():
    faults = Faults()
    seen = []
    faults.subscribe(seen.append)

    async def scenario():
        app = web.Application()
        app.add_routes(aiohttp_routes(faults))
        async with TestClient(TestServer(app)) as client:
            assert (await (await client.get("/twin/v1/faults")).json())["switches"]["agent_never_counts"] is False
            resp = await client.patch("/twin/v1/faults", json={"agent_never_counts": True})
            assert resp.status == 200 and faults.agent_never_counts is True
            bad = await client.patch("/twin/v1/faults", json={"nope": 1})
            assert bad.status == 400 and "nope" in (await bad.json())["error"]
            assert (await client.delete("/twin/v1/faults")).status == 200
            assert faults.agent_never_counts is False

    asyncio.run(scenario())
    assert [s["agent_never_counts"] for s in seen] == [True, False]
