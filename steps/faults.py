"""Faults as steps: turn a twin fault switch on inside a scenario, and restart the DCGM hostengine.

A switch is flipped over the twin's `/twin/v1/faults` (the API server's own HTTP, with the
session's credentials), so a scenario can bring its preconditions up healthy and meet the fault
only where it says so; the compensation puts the switch back to what it was. Every switch the
twin has is reachable by name (`GET /twin/v1/faults` lists them with what each reproduces); a
name the twin does not know fails the step with that list. These steps need the capability
`twin-faults`: a live node has no switch board, so a live run skips them with that reason.

Restarting the hostengine is a real action (its pod is killed and its DaemonSet starts a new one)
that disturbs every DCGM user on the node, so it needs `disruptive`, which only the twin offers.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator

from stepgraph.dsl import CheckFailed, NoParams, Params, StepContext, given, when
from stepgraph.dsl.cache_dir import cache_root, keep_json, parser_release, read_kept_json

from ._clients import ApiError, translated
from ._cluster import HOSTENGINE_SELECTOR, Cluster, cluster

FAULTS_PATH = "/twin/v1/faults"
RESTART_DEADLINE_S = 120.0


def twin_call(c: Cluster, method: str, path: str, body: dict[str, Any] | None = None,
              query: dict[str, str] | None = None) -> Any:
    """A JSON call to one of the twin's own endpoints, through the session's API client (its host,
    TLS and credentials); a refusal raises ApiError with the twin's message."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    with translated(f"{method} {path}"):
        request = c.api.param_serialize(method, path, query_params=list((query or {}).items()), header_params=headers,
                                        body=body, auth_settings=["BearerToken"])
        response = c.api.call_api(*request)
        response.read()
        c.api.response_deserialize(response, {"2XX": "object"})  # raises ApiException on an error status
    return json.loads(response.data or b"null")


def set_switches(c: Cluster, changes: dict[str, Any]) -> dict[str, Any]:
    """PATCH switches; return the values they had before (to put back)."""
    before = twin_call(c, "GET", FAULTS_PATH)["switches"]
    unknown = sorted(set(changes) - set(before))
    if unknown:
        raise CheckFailed(f"fault switch {', '.join(unknown)} is not one the twin has",
                          expected=f"one of {', '.join(sorted(before))}", observed=", ".join(unknown))
    try:
        twin_call(c, "PATCH", FAULTS_PATH, changes)
    except ApiError as exc:
        raise CheckFailed(f"the twin refused the fault {changes}", expected="a value of the switch's type",
                          observed=exc.message) from None
    return {name: before[name] for name in changes}


def _put_back(ctx: StepContext, params: Params, previous: dict[str, Any]) -> None:
    twin_call(cluster(ctx), "PATCH", FAULTS_PATH, previous)


class FaultParams(Params):
    name: str


@given(
    "faults.on",
    "the fault {name} is on",
    key="fault_on",
    needs=("twin-faults",),
    effects=("modifies-objects",),
    compensation=_put_back,
)
def fault_on(ctx: StepContext, params: FaultParams) -> dict[str, Any]:
    """Turn a yes/no twin fault switch on (e.g. "nvml_no_permission"); it is put back at the end."""
    return set_switches(cluster(ctx), {params.name: True})


def _yaml_value(text: str) -> str:
    kept = _accepted_file(text)
    if kept is not None and read_kept_json(kept) is True:
        return text
    from ruamel.yaml import YAML  # the YAML parser: only a value not checked before needs it
    from ruamel.yaml.error import YAMLError

    try:
        YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        raise ValueError(f"{text!r} is not a YAML value ({exc}) — e.g. \"[0, 1]\" or \"'4.4'\"") from None
    if kept is not None:
        keep_json(kept, True)
    return text


# Whether a text is one YAML value is the same every time for the same text, parser and check, and
# importing ruamel.yaml to find out costs more than the rest of binding the step: every lint and
# collection of a scenario that sets a fault would pay it. So the texts the parser accepted are
# kept on disk, named by the text, the source of this module (the check), ruamel.yaml's release
# and the interpreter's; nothing is kept when that release or this source cannot be found. A text
# it refuses is never kept: it is parsed again and reported as ever.


@functools.cache
def _value_checker() -> bytes | None:
    release = parser_release("ruamel.yaml", ("ruamel.yaml-", "ruamel_yaml-"))
    try:
        source = Path(__file__).read_bytes()
    except OSError:
        return None
    return hashlib.sha256(release + source).digest() if release is not None else None


def _accepted_file(text: str) -> Path | None:
    checker = _value_checker()
    if checker is None:
        return None
    return cache_root() / "yaml-values" / f"{hashlib.sha256(checker + text.encode()).hexdigest()[:32]}.json"


class FaultValueParams(Params):
    name: str
    value: Annotated[str, AfterValidator(_yaml_value)]

    def parsed(self) -> Any:
        from ruamel.yaml import YAML

        return YAML(typ="safe", pure=True).load(self.value)


@given(
    "faults.set",
    "the fault {name} is set to {value}",
    key="fault_set",
    needs=("twin-faults",),
    effects=("modifies-objects",),
    compensation=_put_back,
)
def fault_set(ctx: StepContext, params: FaultValueParams) -> dict[str, Any]:
    """Set a twin fault switch to a value written in YAML (e.g. "dcgm_set_connection_lost_gpus" to
    "[0, 1]"); it is put back at the end."""
    return set_switches(cluster(ctx), {params.name: params.parsed()})


@given(
    "faults.set_doc",
    "the fault {name} is set to: {value:docstring}",
    key="fault_set_doc",
    needs=("twin-faults",),
    effects=("modifies-objects",),
    compensation=_put_back,
)
def fault_set_doc(ctx: StepContext, params: FaultValueParams) -> dict[str, Any]:
    """Set a twin fault switch to the YAML value in the doc string below the step (e.g.
    `[0, 1, 2, 3]` for "dcgm_set_connection_lost_gpus"); it is put back at the end."""
    return set_switches(cluster(ctx), {params.name: params.parsed()})


def _hostengine_running(c: Cluster, not_uid: str | None = None) -> None:
    pods = [p for p in c.system_pods(HOSTENGINE_SELECTOR) if p.status and p.status.phase == "Running"]
    fresh = [p for p in pods if p.metadata.uid != not_uid and not p.metadata.deletion_timestamp]
    if len(fresh) != 1:
        raise CheckFailed("a new DCGM hostengine pod running", expected="1 pod other than the one killed",
                          observed=[f"{p.metadata.name} ({p.metadata.uid})" for p in pods] or "none")


def _hostengine_back(ctx: StepContext, params: Params, killed_uid: str) -> None:
    """Compensation: leave the node with a running hostengine, whatever the scenario did since."""
    ctx.eventually(lambda: _hostengine_running(cluster(ctx), killed_uid), RESTART_DEADLINE_S,
                   description="the DCGM hostengine running again")


@when(
    "faults.hostengine_restart",
    "the hostengine restarts",
    key="hostengine_restart",
    needs=("dcgm", "k8s-write", "disruptive"),
    effects=("deletes-objects",),
    compensation=_hostengine_back,
)
def hostengine_restart(ctx: StepContext, params: NoParams) -> str:
    """Kill the DCGM hostengine pod at once (no grace) and wait until its DaemonSet runs a new one:
    every DCGM connection, group and target configuration is gone (E3)."""
    c = cluster(ctx)
    engine = c.the_pod(HOSTENGINE_SELECTOR, "DCGM hostengine")
    with translated(f"delete pod {engine.metadata.name}"):
        c.core.delete_namespaced_pod(engine.metadata.name, engine.metadata.namespace, grace_period_seconds=0)
    ctx.eventually(lambda: _hostengine_running(c, engine.metadata.uid), RESTART_DEADLINE_S,
                   description="a new DCGM hostengine pod running")
    return str(engine.metadata.uid)
