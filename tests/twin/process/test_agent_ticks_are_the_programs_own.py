"""A real agent program's tick is its fixed wait plus its reconcile's work on the twin's clock:
the twin measures it from the program's own pod LISTs (by its service-account token), never from
anyone else's, and a restart's gap is not a tick."""

from __future__ import annotations

import pytest

from stepgraph.dsl import ManualClock
from stepgraph.twin.process.reconciles import ReconcileTicks


def test_the_typical_and_the_longest_recent_reconcile_beyond_the_wait_are_reported():
    ticks = ReconcileTicks(ManualClock(), wait_seconds=15, recent=3)
    assert (ticks.typical_seconds(), ticks.longest_seconds()) == (0.0, 0.0)
    for at in (0.0, 15.5, 33.5, 48.7):
        ticks.listed("node-a", at)
    # ticks of 15.5, 18.0 and 15.2 s: reconciles of 0.5, 3.0 and 0.2 s
    assert ticks.typical_seconds() == pytest.approx(0.5)
    assert ticks.longest_seconds() == pytest.approx(3.0)
    ticks.listed("node-a", 63.9)
    ticks.listed("node-a", 79.0)
    assert ticks.longest_seconds() == pytest.approx(0.2)  # the 18 s tick has left the recent three


def test_a_restart_is_no_tick_and_the_ticks_before_it_still_count():
    ticks = ReconcileTicks(ManualClock(), wait_seconds=15)
    ticks.listed("node-a", 0.0)
    ticks.listed("node-a", 17.0)
    ticks.restarted("node-a")  # the agent container restarted: its start-up is not a tick
    ticks.listed("node-a", 95.0)
    assert ticks.longest_seconds() == pytest.approx(2.0)  # only the tick before the restart
    ticks.listed("node-a", 111.0)
    assert sorted(ticks.reconciles()) == pytest.approx([1.0, 2.0])


def test_the_twin_targets_agent_tick_is_the_reference_agent_programs_measured_tick():
    from kubernetes import client
    from process_rig import eventually

    from stepgraph.targets.twin import TwinTarget

    target = TwinTarget(env={})
    session = target.start({"agent": "reference", "clock": "scaled:25"})
    twin = target.twin
    try:
        ticks = twin.processes.reconciles
        agents = eventually(lambda: [p for p in twin.store.list("pods", None)
                                     if p["metadata"]["name"].startswith("power-agent-")], 30, "the agent pod")
        assert agents
        eventually(lambda: len(ticks.reconciles()) >= 2, 60, "three ticks of the agent")
        api = twin.api_client()
        try:  # the kubeconfig's LISTs (the steps') are no agent's ticks
            client.CoreV1Api(api).list_pod_for_all_namespaces(field_selector="spec.nodeName=another-node")
        finally:
            api.close()
        assert set(ticks._last) == {twin.node.name}  # counted, the kubeconfig's LIST would add another-node
        typical, longest = ticks.typical_seconds(), ticks.longest_seconds()
        assert 0 < typical <= longest  # a real reconcile takes time (how much depends on the load)
        # (a tick may end between the reads)
        assert session.tick_seconds == pytest.approx(15 + typical, abs=1)
        assert session.reconcile_seconds == pytest.approx(2 * longest - typical, abs=2)
    finally:
        target.stop(session)
