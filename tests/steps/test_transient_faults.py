"""The client layer survives transient API faults (the twin injects them over HTTP) and never
mistakes a Ctrl-C for one."""

from __future__ import annotations

import json
import urllib.request

import pytest
from kubernetes.stream.ws_client import websocket_call

from stepgraph.dsl import Bindings, FinalizerStack, StepContext
from stepgraph.steps._clients import ApiError, Forbidden, RetryPolicy, translated, with_retries
from stepgraph.steps._cluster import cluster
from stepgraph.targets.twin import TwinTarget


@pytest.fixture
def ctx():
    target = TwinTarget(env={})
    session = target.start({"world": "path-b"})
    session.clock.sleep(10)  # the agent pod starts
    yield StepContext(session=session, bindings=Bindings(), finalizers=FinalizerStack())
    target.twin.stop()


def _faults(ctx: StepContext, **switches: object) -> dict:
    base = cluster(ctx).api.configuration.host
    request = urllib.request.Request(f"{base}/twin/v1/faults", data=json.dumps(switches).encode(), method="PATCH",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:  # the twin's own routes are never faulted
        return json.load(answer)["switches"]


@pytest.mark.parametrize("kind", ["429", "500", "503", "reset"])
def test_reads_survive_a_fault_on_every_other_request(ctx: StepContext, kind: str) -> None:
    c = cluster(ctx)
    _faults(ctx, api_fault_rate=0.5, api_fault_kinds=[kind])
    before, started = c.calls.total, ctx.clock.now()
    for _ in range(10):
        assert c.pod(c.agent_pod().metadata.name).status.phase == "Running"
    assert c.calls.total > before + 11  # some of the requests were faulted and made again
    if kind == "429":
        assert ctx.clock.now() - started >= 1.0  # Retry-After: 1 was honoured, on the target's clock


def test_exec_survives_refused_handshakes(ctx: StepContext) -> None:
    c = cluster(ctx)
    _faults(ctx, api_fault_rate=0.5, api_fault_kinds=["503"])
    for _ in range(5):
        assert len(c.nvml_caps()) == 8


def test_a_fault_that_does_not_go_away_ends_in_one_error_after_bounded_tries(ctx: StepContext) -> None:
    c = cluster(ctx)
    _faults(ctx, api_fault_rate=1.0, api_fault_kinds=["503"])
    before = c.calls.total
    with pytest.raises(ApiError, match="503"):
        c.pods("app=anything")
    assert c.calls.total - before == RetryPolicy().attempts


def test_refusals_are_not_retried() -> None:
    tries = []

    def forbidden() -> None:
        tries.append(1)
        from kubernetes.client.exceptions import ApiException

        raise ApiException(status=403, reason="Forbidden")

    with pytest.raises(Forbidden), translated("list pods"):
        with_retries(forbidden, sleep=lambda s: None)
    assert len(tries) == 1


class _InterruptingConfiguration:
    """Reading any setting is where the Ctrl-C lands, inside the client's websocket set-up."""

    def __getattr__(self, name: str) -> object:
        raise KeyboardInterrupt


def test_a_ctrl_c_the_websocket_client_rewrapped_is_raised_again() -> None:
    # ws_client catches (Exception, KeyboardInterrupt, SystemExit) and raises ApiException(status=0).
    with pytest.raises(KeyboardInterrupt), translated("exec in pod x/y"):
        with_retries(lambda: websocket_call(_InterruptingConfiguration(), "GET", "http://127.0.0.1:1/api/v1/x", headers={}),
                     sleep=lambda s: None)
