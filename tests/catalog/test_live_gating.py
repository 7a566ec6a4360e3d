"""Live target settings: silent when not opted in, one actionable error when misconfigured."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepgraph.targets.live_settings import LiveConfigError, LiveSettings

ROOT = Path(__file__).resolve().parents[2]


def test_not_opted_in_offers_no_capabilities() -> None:
    settings = LiveSettings.from_env({"TEST_NODE": "gpu-node-1"})
    assert not settings.opted_in
    assert settings.capabilities(path_a=True) == set()


@pytest.mark.parametrize("flag", ["STEPGRAPH_LIVE", "RUN_MULTI_DGD_LIVE"])
def test_opt_in_without_test_node_names_what_to_set(flag: str) -> None:
    with pytest.raises(LiveConfigError, match=f"{flag}=1 but TEST_NODE is empty — set TEST_NODE"):
        LiveSettings.from_env({flag: "1"})


def test_unknown_variant_is_a_config_error() -> None:
    with pytest.raises(LiveConfigError, match="STEPGRAPH_VARIANT='prod'"):
        LiveSettings.from_env({"STEPGRAPH_LIVE": "1", "TEST_NODE": "n", "STEPGRAPH_VARIANT": "prod"})


def test_variant_picks_namespace_unless_pod_namespace_overrides() -> None:
    kaim = LiveSettings.from_env({"STEPGRAPH_LIVE": "1", "TEST_NODE": "n", "STEPGRAPH_VARIANT": "kaim"})
    assert (kaim.namespace, kaim.node_label) == ("kaim-dynamo-system", "power-test/node=kaim")
    custom = LiveSettings.from_env({"STEPGRAPH_LIVE": "1", "TEST_NODE": "n", "POD_NAMESPACE": "mine"})
    assert custom.namespace == "mine"


def test_path_dcgm_and_generations_become_capabilities() -> None:
    env = {"RUN_MULTI_DGD_LIVE": "1", "TEST_NODE": "n"}
    path_b = LiveSettings.from_env(env).capabilities(path_a=False)
    assert {"k8s", "nvml", "path-b", "agent-pa-9790"} <= path_b
    assert not {"dcgm", "planner", "path-a"} & path_b
    path_a = LiveSettings.from_env({**env, "DCGM_HOSTENGINE_AVAILABLE": "1"}).capabilities(path_a=True)
    assert {"path-a", "planner", "dcgm"} <= path_a
    dgd_owned = LiveSettings.from_env({**env, "STEPGRAPH_PLANNER_GENERATION": "dgd-owned"})
    assert "planner" not in dgd_owned.capabilities(path_a=True)


def test_live_target_without_opt_in_starts_with_no_capabilities_and_no_cluster() -> None:
    from stepgraph.targets.live import LiveTarget

    target = LiveTarget(env={"KUBECONFIG": "/nonexistent"})
    assert target.capabilities == frozenset()
    session = target.start({})
    assert session.capabilities == set() and session.facts["opted_in"] is False


def test_live_target_opted_in_without_node_is_a_target_config_error() -> None:
    from stepgraph.dsl import TargetConfigError
    from stepgraph.targets.live import LiveTarget

    with pytest.raises(TargetConfigError, match="live target: STEPGRAPH_LIVE=1 but TEST_NODE is empty"):
        _ = LiveTarget(env={"STEPGRAPH_LIVE": "1"}).capabilities


def test_live_target_with_unreadable_kubeconfig_says_how_to_fix_it(tmp_path) -> None:
    from stepgraph.dsl import TargetConfigError
    from stepgraph.targets.live import LiveTarget

    env = {"STEPGRAPH_LIVE": "1", "TEST_NODE": "n", "KUBECONFIG": str(tmp_path / "missing")}
    with pytest.raises(TargetConfigError, match=r"no Kubernetes credentials .* set KUBECONFIG"):
        LiveTarget(env=env).start({})


def _run_live(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, env_extra: dict[str, str], *args: str):
    """`pytest scenarios/multi_dgd --target live` of the checkout, with only `env_extra` of the live
    settings set; in this process, from the state a fresh process has (tests/conftest.py)."""
    for name in ("STEPGRAPH_LIVE", "RUN_MULTI_DGD_LIVE", "TEST_NODE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env_extra.items():
        monkeypatch.setenv(name, value)
    return pytester.runpytest_inprocess(str(ROOT / "scenarios" / "multi_dgd"), "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"),
                                        "--target", "live", "-p", "no:cacheprovider", "-q", *args)


def test_without_opt_in_every_live_scenario_skips_and_the_run_succeeds(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    proc = _run_live(pytester, monkeypatch, {})
    assert proc.ret == 0, proc.stdout.str()[-2000:]
    assert "23 skipped" in proc.stdout.str()
    collect = _run_live(pytester, monkeypatch, {}, "--collect-only")
    assert collect.ret == 0 and "23 tests collected" in collect.stdout.str()


@pytest.mark.parametrize("flag", ["STEPGRAPH_LIVE", "RUN_MULTI_DGD_LIVE"])
def test_opted_in_without_test_node_exits_2_with_one_actionable_line(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                                     flag: str) -> None:
    proc = _run_live(pytester, monkeypatch, {flag: "1"})
    assert proc.ret == 2
    assert "TEST_NODE is empty — set TEST_NODE" in proc.stdout.str() + proc.stderr.str()
    assert "Traceback" not in proc.stdout.str() + proc.stderr.str()


def test_opted_in_with_a_node_the_cluster_lacks_exits_2(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepgraph.targets.twin import TwinTarget

    target = TwinTarget(env={})
    session = target.start({})
    try:
        proc = _run_live(pytester, monkeypatch, {"STEPGRAPH_LIVE": "1", "TEST_NODE": "gpu-node-404", "KUBECONFIG": session.kubeconfig})
    finally:
        target.twin.stop()
    assert proc.ret == 2
    assert "TEST_NODE='gpu-node-404' is not a node of this cluster" in proc.stdout.str() + proc.stderr.str()


@pytest.mark.parametrize(("world", "path"), [("path-a", "path-a"), ("path-b", "path-b")])
def test_live_target_detects_the_path_from_planner_pods(world: str, path: str) -> None:
    from stepgraph.targets.live import LiveTarget
    from stepgraph.targets.twin import TwinTarget

    twin_target = TwinTarget(env={})
    session = twin_target.start({"world": world, "world_dgds": "keep"})
    try:
        session.clock.sleep(10)  # the operator's planner pods start
        env = {"STEPGRAPH_LIVE": "1", "TEST_NODE": session.facts["node"], "KUBECONFIG": session.kubeconfig,
               "DCGM_HOSTENGINE_AVAILABLE": "1"}
        live = LiveTarget(env=env)
        live.configure({})
        caps = live.capabilities
        facts = live.start({}).facts
    finally:
        twin_target.twin.stop()
    assert path in caps and {"k8s", "nvml", "dcgm"} <= caps
    assert ("planner" in caps) == (path == "path-a")
    assert facts["path"] == path[-1].upper() and facts["node"] == session.facts["node"]


def test_the_live_target_takes_leftovers_adopt_as_the_twin_does() -> None:
    # A run killed on a real cluster is where keeping its leftovers matters most.
    from stepgraph.dsl.target import check_options
    from stepgraph.targets.live import LiveTarget

    target = LiveTarget(env={"KUBECONFIG": "/nonexistent"})
    check_options(target, {"leftovers": "adopt"})
    assert target.start({"leftovers": "adopt"}).facts["leftovers"] == "adopt"
