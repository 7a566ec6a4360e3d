"""A target session → one `Cluster` handle: API clients, the test namespace and node, probes.

Every step library asks `cluster(ctx)` for this handle; it is built once per target session
(cached in `ctx.cache`) from the session's kubeconfig and facts, so steps never know whether they
talk to the twin or to a live node. It also counts the API calls a scenario makes (the catalog
benchmark reports them), retries transient API faults on the target's clock, and stamps the run
(id, host, start time) that every object the run creates carries, so that what a run leaves
behind can always be told apart from what an operator prepared by hand.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from stepgraph.dsl import CheckFailed, StepContext, runid

from . import probes
from ._clients import ClusterError, ExecResult, NotFound, api_client, exec_in_pod, retrying, translated
from ._parsers import Sample, parse_index_ints, parse_index_lists, parse_metrics

if TYPE_CHECKING:
    from kubernetes import client

AGENT_SELECTOR = "app.kubernetes.io/component=power-agent"
HOSTENGINE_SELECTOR = "app=nvidia-dcgm-standalone"
WORKER_SELECTOR = "nvidia.com/dynamo-component-type=worker,purpose=power-aware-multi-dgd-test"
PLANNER_SELECTOR = "nvidia.com/dynamo-component-type=planner,purpose=power-aware-multi-dgd-test"
POWER_ANNOTATION = "dynamo.nvidia.com/gpu-power-limit"
METRICS_PORT = 9100
DGD_LABEL = "nvidia.com/dynamo-graph-deployment-name"
ROLE_LABEL = "nvidia.com/dynamo-sub-component-type"
T = TypeVar("T")
RUN_LABEL = "stepgraph.dev/run"
RUN_HOST_ANNOTATION = "stepgraph.dev/run-host"
RUN_STARTED_ANNOTATION = "stepgraph.dev/run-started"
#: Test hook for the interruption matrix: SIGINT to this process right after the N-th API request.
SIGINT_AFTER_ENV = "STEPGRAPH_TEST_SIGINT_AFTER_REQUEST"


@dataclass(frozen=True)
class RunStamp:
    """Who created an object: this run's id, the host it ran on and when it started."""

    id: str
    host: str
    started: str

    @classmethod
    def new(cls) -> RunStamp:
        """This run's stamp: one per run (every node of a per-node run and every pytest-xdist
        worker of a run shares its id, so no worker takes another's objects for a leftover)."""
        global _THIS_RUN
        run_id = runid.current()
        if _THIS_RUN is None or _THIS_RUN.id != run_id:
            started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            _THIS_RUN = cls(run_id, socket.gethostname()[:253], started)
        return _THIS_RUN

    def mark(self, metadata: dict[str, Any]) -> None:
        """Put the run's label and annotations into an object's metadata (before it is created)."""
        metadata.setdefault("labels", {})[RUN_LABEL] = self.id
        metadata.setdefault("annotations", {}).update({RUN_HOST_ANNOTATION: self.host, RUN_STARTED_ANNOTATION: self.started})

    @staticmethod
    def of(metadata: Any) -> str:
        """The run that created an object (metadata as a dict or a client model); "" for none."""
        labels = metadata.get("labels") if isinstance(metadata, dict) else getattr(metadata, "labels", None)
        return str((labels or {}).get(RUN_LABEL) or "")


_THIS_RUN: RunStamp | None = None


def sigint_after(env: Mapping[str, str]) -> int | None:
    """The request count of the interruption hook (`STEPGRAPH_TEST_SIGINT_AFTER_REQUEST`), if set."""
    text = env.get(SIGINT_AFTER_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ClusterError(f"{SIGINT_AFTER_ENV}={text!r} — write a whole number ≥ 1, or unset it")
    return int(text)


class CallCounter:
    """Counts API requests (REST calls and exec streams, every retry included) made through one
    Cluster; with `interrupt_after`, sends this process SIGINT once that many have been made."""

    def __init__(self, interrupt_after: int | None = None) -> None:
        self.total = 0
        self.interrupt_after = interrupt_after

    def wrap(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def counted(*args: Any, **kwargs: Any) -> Any:
            return self.around(lambda: func(*args, **kwargs))

        return counted

    def around(self, request: Callable[[], T]) -> T:
        """Make one request, counted (and, at the hook's count, interrupted once it is answered)."""
        self.total += 1
        try:
            return request()
        finally:
            if self.total == self.interrupt_after:
                os.kill(os.getpid(), signal.SIGINT)


@dataclass(frozen=True)
class PodSummary:
    """What most checks read of a pod: its name, phase (None before it has a status), node and
    labels and annotations."""

    name: str
    phase: str | None
    node: str | None
    labels: dict[str, str]
    annotations: dict[str, str]

    @classmethod
    def of(cls, item: dict[str, Any]) -> PodSummary:
        meta, spec, status = item["metadata"], item.get("spec") or {}, item.get("status") or {}
        return cls(meta["name"], status.get("phase"), spec.get("nodeName"), meta.get("labels") or {}, meta.get("annotations") or {})


@dataclass
class Cluster:
    """The session's cluster as the steps see it."""

    api: client.ApiClient
    namespace: str  # where the run creates its objects and finds its workloads
    node: str
    manifest_dir: Path | None
    calls: CallCounter
    run: RunStamp = field(default_factory=RunStamp.new)
    sleep: Callable[[float], None] = time.sleep  # the target's clock: back-off between retries
    metrics_via: str = "exec"
    nvml_via: str = "exec"
    #: Where the node's system under test runs (the agent and hostengine DaemonSets); the same as
    #: `namespace` unless the run has a namespace of its own (runners of a fleet, side by side).
    system_namespace: str = ""
    _agent: client.V1Pod | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.system_namespace = self.system_namespace or self.namespace

    @property
    def core(self) -> client.CoreV1Api:
        from kubernetes import client  # on first use: see _clients

        return client.CoreV1Api(self.api)

    @property
    def custom(self) -> client.CustomObjectsApi:
        from kubernetes import client

        return client.CustomObjectsApi(self.api)

    @property
    def apps(self) -> client.AppsV1Api:
        from kubernetes import client

        return client.AppsV1Api(self.api)

    # -- pods ----------------------------------------------------------------------------------

    def pods(self, label_selector: str, *, on_node: bool = True, namespace: str | None = None) -> list[client.V1Pod]:
        return self._list_pods(label_selector, on_node, namespace, as_json=False)

    def pod_summaries(self, label_selector: str, *, on_node: bool = True, namespace: str | None = None) -> list[PodSummary]:
        """The same list as `pods`, read as the API's JSON into the few fields most checks need:
        the client's models deserialise every field of every pod (about 0.3 ms a pod), and the
        waits for pods to start or go list them again and again."""
        return [PodSummary.of(item) for item in self._list_pods(label_selector, on_node, namespace, as_json=True)]

    def _list_pods(self, label_selector: str, on_node: bool, namespace: str | None, *, as_json: bool) -> list[Any]:
        """The pods of `label_selector` (on the test node unless not `on_node`): the client's
        models, or with `as_json` the API's JSON objects."""
        on_this_node = f"spec.nodeName={self.node}" if on_node and self.node else None
        namespace = namespace or self.namespace
        with translated(f"list pods {label_selector!r} in {namespace}"):
            kwargs = {"field_selector": on_this_node} if on_this_node else {}
            if as_json:
                response = self.core.list_namespaced_pod(namespace, label_selector=label_selector, _preload_content=False, **kwargs)
                return json.loads(response.data)["items"] or []
            return list(self.core.list_namespaced_pod(namespace, label_selector=label_selector, **kwargs).items)

    def system_pods(self, label_selector: str) -> list[client.V1Pod]:
        """Pods of the system under test (agent, hostengine) on the test node."""
        return self.pods(label_selector, namespace=self.system_namespace)

    def pod(self, name: str) -> client.V1Pod:
        with translated(f"read pod {self.namespace}/{name}"):
            return self.core.read_namespaced_pod(name, self.namespace)

    def the_pod(self, label_selector: str, what: str) -> client.V1Pod:
        """Exactly one running pod of the system under test on the test node with these labels
        (else a failed check)."""
        found = [p for p in self.system_pods(label_selector) if p.status and p.status.phase == "Running"]
        if len(found) != 1:
            raise CheckFailed(
                f"expected exactly one running {what} pod on node {self.node}",
                expected=f"1 pod matching {label_selector}",
                observed=[p.metadata.name for p in found] or "none",
            )
        return found[0]

    def exec(self, pod: client.V1Pod, argv: list[str]) -> ExecResult:
        # The exec stream bypasses the ApiClient's call_api, so it is counted (and retried) here.
        return self.calls.around(lambda: exec_in_pod(self.core, pod.metadata.name, pod.metadata.namespace, argv,
                                                          sleep=self.sleep))

    def _inside_allowed(self, path: Path, name: str) -> Path:
        resolved = path.resolve()
        roots = allowed_manifest_roots(self.manifest_dir, os.environ)
        if not any(resolved.is_relative_to(root) for root in roots):
            raise PermissionError(
                f"manifest {name!r} is outside the project ({resolved}) — put it under {Path.cwd()} "
                f"or allow its folder with {MANIFEST_DIRS_ENV}={resolved.parent}"
            )
        return resolved

    # -- readings through the agent pod --------------------------------------------------------

    def agent_pod(self) -> client.V1Pod:
        """The one running Power Agent pod on the test node (looked up once, again if it went away)."""
        if self._agent is None:
            self._agent = self.the_pod(AGENT_SELECTOR, "Power Agent")
        return self._agent

    def find_agent(self) -> client.V1Pod:
        """Look the agent pod up afresh (a precondition check), and remember it."""
        self._agent = self.the_pod(AGENT_SELECTOR, "Power Agent")
        return self._agent

    def probe(self, name: str) -> str:
        """Run a shipped probe script inside the agent pod — or, for NVML probes with the session
        fact `nvml_via: local` (a runner on the GPU node itself), in a local Python with this
        process's pynvml — and return its stdout, or raise an ExecError."""
        if self.nvml_via == "local" and name in probes.NVML_PROBES:
            return run_locally(probes.argv(name)[1:]).check(f"local probe {name}").stdout
        return self.exec_in_agent(probes.argv(name)).check(f"probe {name}").stdout

    def exec_in_agent(self, argv: list[str]) -> ExecResult:
        """Run `argv` in the current agent pod: one replaced since it was looked up (a restart, an
        OOM kill, a scenario's own delete) is looked up again once, so a teardown reaches the agent
        that runs now, not the one that ran when the scenario began."""
        try:
            return self.exec(self.agent_pod(), argv)
        except NotFound:
            self._agent = None
            return self.exec(self.agent_pod(), argv)

    def nvml_caps(self) -> dict[int, int]:
        return parse_index_ints(self.probe("nvml_caps"))

    def nvml_pids(self) -> dict[int, list[int]]:
        return parse_index_lists(self.probe("nvml_pids"))

    def metrics(self) -> list[Sample]:
        """The agent's Prometheus page: by the exec probe, or through the API server's pod proxy
        where exec into the agent is not allowed (session fact `metrics_via: proxy`)."""
        if self.metrics_via == "proxy":
            agent = self.agent_pod().metadata
            with translated(f"proxy to {agent.namespace}/{agent.name}:{METRICS_PORT}/metrics"):
                text = self.core.connect_get_namespaced_pod_proxy_with_path(f"{agent.name}:{METRICS_PORT}", agent.namespace,
                                                                            "metrics")
            return parse_metrics(text)
        return parse_metrics(self.probe("metrics"))

    def manifest(self, name: str) -> Path:
        """A manifest by path, or by file name inside the session's variant folder.

        Only files inside the variant folder, the folder the run started in (the project) or a
        folder named in STEPGRAPH_MANIFEST_DIRS are read: a scenario cannot make the run read
        (and send to a cluster) a file from anywhere on the machine."""
        candidates = [Path(name)]
        if self.manifest_dir is not None:
            candidates.insert(0, self.manifest_dir / name)
            candidates.insert(1, self.manifest_dir / f"{name}.yaml")
        for path in candidates:
            if path.is_file():
                return self._inside_allowed(path, name)
        raise FileNotFoundError(
            f"manifest {name!r} not found (looked in {', '.join(str(c) for c in candidates)}) — "
            "name a file of examples/manifests/<variant>/ or give a path"
        )


MANIFEST_DIRS_ENV = "STEPGRAPH_MANIFEST_DIRS"


def allowed_manifest_roots(manifest_dir: Path | None, env: Mapping[str, str]) -> list[Path]:
    """The folders manifests may be read from: the variant folder, the project, and any folder
    of STEPGRAPH_MANIFEST_DIRS (separated like PATH)."""
    extra = [Path(p) for p in env.get(MANIFEST_DIRS_ENV, "").split(os.pathsep) if p]
    return [p.resolve() for p in [*([manifest_dir] if manifest_dir else []), Path.cwd(), *extra]]


def run_locally(python_args: list[str]) -> ExecResult:
    """`python3 <args>` in a child of this interpreter: the same probe bytes, the local pynvml."""
    done = subprocess.run([sys.executable, *python_args], capture_output=True, text=True, timeout=60, check=False)
    return ExecResult(done.stdout, done.stderr, done.returncode)


def shipped_manifests(variant: str) -> Path:
    """The ready-to-apply manifests of a variant that ship with the package (examples/manifests/<variant>/)."""
    # An installed package is a folder on disk (pip unpacks wheels), so the resource is a plain path.
    return Path(str(resources.files("stepgraph.steps").joinpath("manifests", variant)))


def cluster(ctx: StepContext) -> Cluster:
    """The session's Cluster, created on first use."""
    found = ctx.cache.get("cluster")
    if found is None:
        facts = ctx.session.facts
        api = api_client(ctx.kubeconfig)
        calls = CallCounter(sigint_after(os.environ))
        api.call_api = retrying(calls.wrap(api.call_api), ctx.clock.sleep)  # type: ignore[method-assign]
        manifests = facts.get("manifests") or shipped_manifests(str(facts.get("variant", "target")))
        found = Cluster(
            api=api,
            namespace=str(facts.get("run_namespace") or facts.get("namespace", "dynamo-power-test")),
            system_namespace=str(facts.get("namespace", "dynamo-power-test")),
            node=str(facts.get("node", "")),
            manifest_dir=Path(manifests),
            calls=calls,
            sleep=ctx.clock.sleep,
            metrics_via=str(facts.get("metrics_via", "exec")),
            nvml_via=str(facts.get("nvml_via", "exec")),
        )
        ctx.cache["cluster"] = found
    return found
