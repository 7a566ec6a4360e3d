"""The reference Power Agent obeys the agent contract the design doc lists (B1–B8, C2, C3, D1, D3)."""

from __future__ import annotations

from collections import Counter

import pytest
from gpu_rig import B200_CAPS, B200_TOPOLOGY, STATE, Rig, bad_counter_sums, scrape
from stepgraph.twin.faults import Faults


def test_b1_every_pod_on_the_node_is_in_scope_with_its_annotation(rig):
    rig.topology()
    agent = rig.agent()
    scope = agent._build_uid_to_annotation(rig.list_pods())
    assert len(scope) == 5
    assert sorted(scope.values()) == sorted(cap for *_, cap in B200_TOPOLOGY.values())
    assert {p["metadata"]["labels"]["nvidia.com/dynamo-graph-deployment-name"] for p in rig.pods.values()} == {
        "dgd-v", "dgd-t", "dgd-s"}


def test_b2_one_reconcile_writes_eight_caps_from_the_table(rig):
    rig.topology()
    agent = rig.agent()
    agent.reconcile_once()
    assert sorted(agent.writes) == sorted(B200_CAPS.items())
    assert rig.caps() == B200_CAPS


def test_b3_tp_helper_pids_dedup_by_uid_so_agree_stays_zero(rig):
    rig.topology(helpers=3)
    assert len(rig.host.pids_on_gpu(rig.board.gpus[2].uuid)) == 3
    agent = rig.agent()
    agent.reconcile_once()
    assert "dynamo_power_agent_multi_pod_gpu_total" not in "".join(scrape(agent))


def test_b4_d3_well_formed_topology_keeps_every_bad_counter_at_zero(rig):
    rig.topology()
    agent = rig.agent()
    baseline = bad_counter_sums(agent)
    for _ in range(3):
        agent.reconcile_once()
    assert bad_counter_sums(agent) == baseline == {k: 0 for k in baseline}


def b5_setup(rig):
    rig.topology()
    t_p_uid = rig.pods["t-p"]["metadata"]["uid"]
    rig.host.spawn(t_p_uid, ["python", "stray"], gpus=[rig.board.gpus[0].uuid])  # T-P helper lands on GPU 0
    return rig.agent(safe=350)


def test_b5_conflict_gives_safe_default_on_that_gpu_only(rig):
    agent = b5_setup(rig)
    agent.reconcile_once()
    samples = scrape(agent)
    assert samples['dynamo_power_agent_multi_pod_gpu_total{disposition="conflict"}'] == 1
    assert samples["dynamo_power_agent_safe_default_applied_total"] == 1
    assert rig.caps() == {**B200_CAPS, 0: 350}
    assert len(agent.writes) == 8


def test_b5_counters_tick_on_every_tick_that_still_sees_the_conflict(rig):
    agent = b5_setup(rig)
    for _ in range(3):
        agent.reconcile_once()
    assert scrape(agent)['dynamo_power_agent_multi_pod_gpu_total{disposition="conflict"}'] == 3


def test_b6_dcgm_identity_map_routes_pid_reads_through_uuids():
    rig = Rig(dcgm_order="reversed")
    rig.topology()
    rig.devices.start_hostengine()
    agent = rig.agent(actuator="dcgm")
    act = agent.actuator
    act._ensure_identity_map()
    assert act._dcgm_uuid_by_idx == [rig.board.gpus[7 - k].uuid for k in range(8)]
    assert act._nvml_index_by_uuid == {g.uuid: g.index for g in rig.board.gpus}
    assert act.list_running_pids(0) == rig.host.pids_on_gpu(rig.board.gpus[7].uuid)
    agent.reconcile_once()
    assert rig.caps() == B200_CAPS  # NVML sees what DCGM wrote, GPU for GPU


def test_b7_connection_loss_on_set_reconnects_and_retries(rig):
    rig.topology()
    rig.devices.start_hostengine()
    rig.faults.set("dcgm_set_connection_lost_gpus", [1, 5])
    agent = rig.agent(actuator="dcgm", enforce=True)
    agent.reconcile_once()
    assert rig.caps() == B200_CAPS
    sums = bad_counter_sums(agent)
    assert sums["apply_failures_total"] == 0 and sums["dcgm_enforce_failures_total"] == 0
    assert sum("reconnecting" in line for line in rig.logs) == 2


def test_b8_enforce_failure_counts_but_the_cap_stays_live(rig):
    rig.topology()
    rig.devices.start_hostengine()
    rig.faults.set("dcgm_enforce_fails_gpus", [0, 3])
    agent = rig.agent(actuator="dcgm", enforce=True)
    agent.reconcile_once()
    assert rig.caps() == B200_CAPS
    sums = bad_counter_sums(agent)
    assert sums["apply_failures_total"] == 0 and sums["dcgm_enforce_failures_total"] == 2
    assert sorted(agent.state.indices) == list(range(8))


@pytest.mark.parametrize("actuator", ["nvml", "dcgm"])
def test_c2_sigterm_restores_every_managed_gpu_to_default(rig, actuator):
    rig.topology()
    rig.devices.start_hostengine()
    agent = rig.agent(actuator=actuator)
    agent.reconcile_once()
    assert sorted(agent.handle_sigterm()) == list(range(8))
    assert set(rig.caps().values()) == {1000}
    assert '"managed_uuids": []' in rig.devices.files.read(STATE)


def crash_then_restart(rig, gone):
    rig.topology()
    first = rig.agent()
    first.reconcile_once()  # then the process dies without SIGTERM
    for name in gone:
        rig.remove_pod(name)
    second = rig.agent()
    second.start()
    return second


def test_c3a_restart_with_all_pods_running_restores_nothing(rig):
    crash_then_restart(rig, gone=[])
    assert rig.caps() == B200_CAPS


def test_c3b_restart_restores_only_the_gpus_whose_pods_are_gone(rig):
    crash_then_restart(rig, gone=["t-p", "t-d"])
    assert rig.caps() == {**B200_CAPS, 2: 1000, 3: 1000, 4: 1000, 5: 1000}


def test_c3c_restart_with_every_pod_gone_restores_all_eight(rig):
    agent = crash_then_restart(rig, gone=list(B200_TOPOLOGY))
    assert set(rig.caps().values()) == {1000}
    assert agent.state.uuids == set()


def test_corrupt_state_file_is_ignored_with_a_warning(rig):
    rig.devices.files.write(STATE, "{not json")
    agent = rig.agent()
    agent.start()
    assert any("ignoring unreadable" in line for line in rig.logs)


def test_d1_applied_limit_gauge_matches_the_table(rig):
    rig.topology()
    agent = rig.agent()
    agent.reconcile_once()
    samples = scrape(agent)
    assert {g: samples[f'dynamo_power_agent_applied_limit_watts{{gpu="{g}"}}'] for g in range(8)} == B200_CAPS


@pytest.mark.parametrize(
    ("raw", "cap", "counter"),
    [
        ("abc", 350, "dynamo_power_agent_safe_default_applied_total"),
        ("", 350, "dynamo_power_agent_safe_default_applied_total"),
        ("350W", 350, "dynamo_power_agent_safe_default_applied_total"),
        ("12.5", 350, "dynamo_power_agent_safe_default_applied_total"),
        ("-5", 200, 'dynamo_power_agent_cap_clamped_total{direction="min"}'),
        ("99999", 1000, 'dynamo_power_agent_cap_clamped_total{direction="max"}'),
    ],
)
def test_malformed_annotation_applies_the_policy_and_never_crashes(rig, raw, cap, counter):
    rig.add_pod("odd", [4], raw)
    agent = rig.agent(safe=350)
    agent.reconcile_once()
    assert rig.caps()[4] == cap
    assert scrape(agent)[counter] == 1


def test_unannotated_gpu_pod_gets_safe_default_under_pa_9790_only(rig):
    rig.add_pod("plain", [3], None)
    old, optin = rig.agent("PA-9790", safe=280), None
    old.reconcile_once()
    assert rig.caps()[3] == 280
    rig.board.gpus[3].set_limit_mw(1_000_000)
    optin = rig.agent("PA-optin", safe=280)
    optin.reconcile_once()
    assert rig.caps()[3] == 1000 and bad_counter_sums(optin)["safe_default_applied_total"] == 0


def test_pa_late_releases_a_managed_gpu_when_the_tenant_changes(rig):
    rig.add_pod("tenant", [2], "300")
    agent = rig.agent("PA-late")
    agent.reconcile_once()
    assert rig.caps()[2] == 300
    rig.remove_pod("tenant")
    rig.add_pod("plain", [2], None)
    agent.reconcile_once()
    assert rig.caps()[2] == 1000
    assert "dynamo_power_agent_dcgm_enforce_failures_total" not in scrape(agent)


def test_pa_optin_keeps_the_cap_when_the_tenant_changes(rig):
    rig.add_pod("tenant", [2], "300")
    agent = rig.agent("PA-optin")
    agent.reconcile_once()
    rig.remove_pod("tenant")
    rig.add_pod("plain", [2], None)
    agent.reconcile_once()
    assert rig.caps()[2] == 300


def test_idle_gpu_keeps_its_cap(rig):
    rig.add_pod("w", [5], "333")
    agent = rig.agent()
    agent.reconcile_once()
    rig.remove_pod("w")
    agent.reconcile_once()
    assert rig.caps()[5] == 333


def test_non_kubernetes_processes_are_skipped(rig):
    rig.host.spawn_system(["nvidia-persistenced"], gpus=[rig.board.gpus[6].uuid])
    agent = rig.agent()
    agent.reconcile_once()
    assert agent.writes == [] and bad_counter_sums(agent)["safe_default_applied_total"] == 0


def test_pod_list_failure_skips_the_cycle_and_counts(rig):
    from stepgraph.twin.power_agent import PodListError

    rig.topology()
    rig.list_error = PodListError("(403) forbidden")
    agent = rig.agent()
    agent.reconcile_once()
    assert agent.writes == [] and set(rig.caps().values()) == {1000}
    assert scrape(agent)["dynamo_power_agent_k8s_list_failures_total"] == 1


def test_nvml_write_failure_counts_and_keeps_the_gpu_unmanaged():
    rig = Rig(faults=Faults({"nvml_no_permission": True}))
    rig.topology()
    agent = rig.agent()
    agent.reconcile_once()
    assert bad_counter_sums(agent)["apply_failures_total"] == 8
    assert agent.state.indices == set()
    assert Counter(rig.caps().values()) == Counter({1000: 8})


@pytest.mark.parametrize(
    ("generation", "raws", "cap", "counters"),
    [
        ("PA-optin", ["abc"], 350, {"apply_failures_total": 1, "safe_default_applied_total": 1}),
        ("PA-optin", ["480", "480"], 480, {"multi_pod_gpu_total": 1}),
        ("PA-optin", ["480", "oops"], 480, {"multi_pod_gpu_total": 1}),
        ("PA-optin", ["480", "450"], 350, {"multi_pod_gpu_total": 1, "safe_default_applied_total": 1}),
        ("PA-9790", ["480", "480"], 480, {"multi_pod_gpu_total": 1}),
        ("PA-9790", ["480", "oops"], 350, {"multi_pod_gpu_total": 1, "safe_default_applied_total": 1}),
    ],
)
def test_policy_per_generation_on_one_gpu(rig, generation, raws, cap, counters):
    for n, raw in enumerate(raws):
        rig.add_pod(f"p{n}", [1], raw)
    agent = rig.agent(generation, safe=350)
    agent.reconcile_once()
    assert rig.caps()[1] == cap
    sums = bad_counter_sums(agent)
    assert {k: v for k, v in sums.items() if v} == counters


def test_c4_every_tick_writes_every_busy_gpu_once(rig):
    rig.topology()
    agent = rig.agent()
    for _ in range(5):
        agent.reconcile_once()
    assert sum(g.writes for g in rig.board.gpus) == 5 * 8
