"""A fleet run against a cluster: RBAC and one Job per node in, per-node results out, nothing left.

Each node's outcome is either the results document its runner pod printed, or a reason: its pod
never scheduled within `schedule_timeout` (the scheduler's own message), it ended without
results (exit code and last log lines), or nothing came back within `timeout`. Whatever happens —
also Ctrl-C or SIGTERM — the Jobs and their pods are deleted and awaited, then the runners'
namespaces (with whatever a runner left in its own) and the RBAC objects this run created; what
was removed is said in one line. Everything it touches carries its run id, so a fleet run never
removes another's objects.
"""

from __future__ import annotations

import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from . import objects
from .results import BEGIN, from_log


@dataclass
class NodeOutcome:
    node: str
    document: dict[str, Any] | None = None
    reason: str | None = None

    @property
    def done(self) -> bool:
        return self.document is not None or self.reason is not None


@dataclass
class FleetSettings:
    namespace: str
    image: str
    run_args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    schedule_timeout_s: float = 300.0
    timeout_s: float = 3600.0
    poll_s: float = 2.0
    service_account: str | None = None  # an existing one (RBAC managed by the operator): none is created


class FleetRun:
    def __init__(self, api: client.ApiClient, settings: FleetSettings, *, log: Callable[[str], None] = print,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.api, self.settings, self.log = api, settings, log
        self.clock, self.sleep = clock, sleep
        self.core = client.CoreV1Api(api)
        self.batch = client.BatchV1Api(api)
        self.rbac = client.RbacAuthorizationV1Api(api)
        self.run_id = secrets.token_hex(3)
        self._created_rbac: list[tuple[str, str | None, str]] = []  # (kind, namespace, name)
        self._namespaces: list[str] = []
        self._jobs: list[str] = []
        self.cleaned: list[str] = []  # what the last cleanup removed, one phrase per kind
        self._cleaning = False
        self._waiting = False  # in the pause between two polls: where an interrupt is raised
        self._signals: list[int] = []

    # -- the run ----------------------------------------------------------------------------
    def run(self, nodes: list[dict[str, str | None]]) -> list[NodeOutcome]:
        """`nodes`: `{"name", "hostname"}` each. Returns one outcome per node, in order."""
        outcomes = {str(n["name"]): NodeOutcome(str(n["name"])) for n in nodes}
        with self._signals_handled():
            self._run(nodes, outcomes)
        return [outcomes[str(n["name"])] for n in nodes]

    def _run(self, nodes: list[dict[str, str | None]], outcomes: dict[str, NodeOutcome]) -> None:
        try:
            if self.settings.service_account is None:
                self._ensure_rbac()
            for n in nodes:
                self._run_namespace(str(n["name"]))
            deadline_s = int(self.settings.timeout_s) + 60
            for n in nodes:
                body = objects.job(self.run_id, str(n["name"]), n.get("hostname"), self.settings.namespace,
                                   self.settings.image, self.settings.run_args, self.settings.env, deadline_s,
                                   service_account=self.settings.service_account)
                self._jobs.append(body["metadata"]["name"])  # intent first: a lost answer is still cleaned up
                self.batch.create_namespaced_job(self.settings.namespace, body)
            self.log(f"stepgraph fleet: run {self.run_id}: {len(nodes)} Job(s) in {self.settings.namespace}")
            self._await(outcomes)
        finally:
            self.cleanup()

    @contextmanager
    def _signals_handled(self) -> Iterator[None]:
        """SIGINT and SIGTERM interrupt the run (KeyboardInterrupt) — except while it cleans up,
        when they are only noted and said: stopping half-way would leave objects behind. Signal
        handlers belong to the main thread; elsewhere the process's own handling stays.

        The interrupt is raised in the pause between two polls (`_pause`), at once if the run is
        pausing, else as the next pause begins (a poll later at most): raised inside a request
        to the cluster it could leave the client's connection pool with its lock taken for good,
        and the clean-up's first request would then wait for it forever."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handle(signum: int, _frame: object) -> None:
            self._signals.append(signum)
            if self._cleaning:
                self.log("stepgraph fleet: still cleaning up — the Jobs, pods and namespaces go first")
            elif self._waiting:
                raise KeyboardInterrupt

        previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _await(self, outcomes: dict[str, NodeOutcome]) -> None:
        started = self.clock()
        while not all(o.done for o in outcomes.values()):
            elapsed = self.clock() - started
            pods = self._pods()
            for node, outcome in outcomes.items():
                if outcome.done:
                    continue
                pod = pods.get(node)
                outcome.document, outcome.reason = self._judge(node, pod, elapsed)
                if outcome.done:
                    self._report(outcome)
            if all(o.done for o in outcomes.values()):
                return
            if elapsed >= self.settings.timeout_s:
                for outcome in outcomes.values():
                    if not outcome.done:
                        phase = self._phase(pods.get(outcome.node))
                        outcome.reason = f"no result within {self.settings.timeout_s:.0f} s (runner pod {phase})"
                        self._report(outcome)
                return
            self._pause(self.settings.poll_s)

    def _pause(self, seconds: float) -> None:
        """The wait before the next poll: an interrupt noted since the run began is raised here,
        and one that comes during the wait ends it at once (see `_signals_handled`)."""
        self._waiting = True
        try:
            if self._signals:
                raise KeyboardInterrupt
            self.sleep(seconds)
        finally:
            self._waiting = False

    def _judge(self, node: str, pod: Any, elapsed: float) -> tuple[dict | None, str | None]:
        late = elapsed >= self.settings.schedule_timeout_s
        if pod is None:
            return (None, f"its Job made no runner pod within {self.settings.schedule_timeout_s:.0f} s") if late \
                else (None, None)
        phase = pod.status.phase if pod.status else None
        if phase in ("Succeeded", "Failed"):
            text = self._logs(pod)
            document = from_log(text)
            if document is not None and (phase == "Succeeded" or _has_failures(document)):
                return document, None
            # A runner that failed yet reports no failed scenario (a configuration error, exit 2,
            # before any scenario ran) must not make its node look green.
            what = "without results" if document is None else "with no failed scenario"
            return None, f"runner pod {phase.lower()} {what} ({_exit(pod)}); log ends: {_tail(text.split(BEGIN)[0])}"
        if not pod.spec.node_name and late:
            message = next((c.message for c in (pod.status.conditions or []) if c.type == "PodScheduled" and c.message),
                           "no scheduling decision")
            return None, f"runner pod never scheduled within {self.settings.schedule_timeout_s:.0f} s: {message}"
        return None, None

    def _report(self, outcome: NodeOutcome) -> None:
        if outcome.document is not None:
            summary = outcome.document.get("summary", {})
            counts = ", ".join(f"{v} {k}" for k, v in summary.items() if k != "total" and v)
            self.log(f"stepgraph fleet: node {outcome.node}: {counts or 'no scenarios'}")
        else:
            self.log(f"stepgraph fleet: node {outcome.node}: FAILED — {outcome.reason}")

    # -- reads ------------------------------------------------------------------------------
    def _pods(self) -> dict[str, Any]:
        found = self.core.list_namespaced_pod(self.settings.namespace,
                                              label_selector=f"{objects.RUN_LABEL}={self.run_id}").items
        by_node: dict[str, Any] = {}
        for pod in found:
            node = (pod.metadata.annotations or {}).get(objects.NODE_ANNOTATION)
            if node and not pod.metadata.deletion_timestamp:
                by_node[node] = pod
        return by_node

    def _logs(self, pod: Any) -> str:
        try:
            return self.core.read_namespaced_pod_log(pod.metadata.name, self.settings.namespace, container="runner")
        except ApiException as exc:
            return f"(log unreadable: {exc.status} {exc.reason})"

    @staticmethod
    def _phase(pod: Any) -> str:
        if pod is None:
            return "not created"
        return (pod.status.phase if pod.status else None) or "Unknown"

    # -- RBAC and cleanup -------------------------------------------------------------------
    def _ensure_rbac(self) -> None:
        ns, run = self.settings.namespace, self.run_id
        for kind, body, create in (
            ("ServiceAccount", objects.service_account(run, ns), lambda b: self.core.create_namespaced_service_account(ns, b)),
            ("Role", objects.role(run, ns), lambda b: self.rbac.create_namespaced_role(ns, b)),
            ("RoleBinding", objects.role_binding(run, ns), lambda b: self.rbac.create_namespaced_role_binding(ns, b)),
            ("ClusterRole", objects.cluster_role(run), self.rbac.create_cluster_role),
            ("ClusterRoleBinding", objects.cluster_role_binding(run, ns), self.rbac.create_cluster_role_binding),
            ("ClusterRole", objects.work_cluster_role(run), self.rbac.create_cluster_role),
        ):
            # Intent first: a create whose answer is lost (Ctrl-C) is still removed; a 404 then is fine.
            self._created_rbac.append((kind, body["metadata"].get("namespace"), body["metadata"]["name"]))
            create(body)

    def _run_namespace(self, node: str) -> None:
        """The node's runner namespace and (unless the operator manages RBAC) its rights there."""
        body = objects.run_namespace(self.run_id, node)
        name = body["metadata"]["name"]
        self._namespaces.append(name)
        self.core.create_namespace(body)
        if self.settings.service_account is None:
            self.rbac.create_namespaced_role_binding(
                name, objects.work_role_binding(self.run_id, name, self.settings.namespace))

    def cleanup(self) -> None:
        """Delete this run's Jobs and pods (and await them), then its namespaces (and await them),
        then the RBAC objects it created; `cleaned` says what was removed. A Ctrl-C or SIGTERM
        meanwhile is noted and raised once it is done: stopping half-way would leave objects. So is
        one noted before that no pause raised (the run ended before its next poll)."""
        self._cleaning = True
        if self._jobs or self._namespaces or self._created_rbac:
            self.log(f"stepgraph fleet: run {self.run_id}: removing its Jobs, pods, namespaces and RBAC")
        try:
            self._cleanup()
        finally:
            self._cleaning = False
        if self._signals:
            raise KeyboardInterrupt

    def _cleanup(self) -> None:
        ns = self.settings.namespace
        self.cleaned = []
        if self._jobs:
            self.cleaned.append(f"{len(self._jobs)} Job(s) and their runner pods")
        for name in self._jobs:
            try:
                self.batch.delete_namespaced_job(name, ns, propagation_policy="Background")
            except ApiException as exc:
                if exc.status != 404:
                    self.log(f"stepgraph fleet: could not delete Job {name}: {exc.status} {exc.reason}")
        # Background propagation (as kubectl deletes): the garbage collector removes each Job's
        # pods; without it a Job's pods are orphaned and outlive it. Here we only await them.
        selector = f"{objects.RUN_LABEL}={self.run_id}"
        give_up = self.clock() + 120
        while self.core.list_namespaced_pod(ns, label_selector=selector).items and self.clock() < give_up:
            self.sleep(min(self.settings.poll_s, 1.0))
        left = [p.metadata.name for p in self.core.list_namespaced_pod(ns, label_selector=selector).items]
        if left:
            self.log(f"stepgraph fleet: runner pods still there after 120 s: {', '.join(left)}")
        self._remove_namespaces()
        delete = {"ServiceAccount": lambda n, s: self.core.delete_namespaced_service_account(s, n),
                  "Role": lambda n, s: self.rbac.delete_namespaced_role(s, n),
                  "RoleBinding": lambda n, s: self.rbac.delete_namespaced_role_binding(s, n),
                  "ClusterRole": lambda n, s: self.rbac.delete_cluster_role(s),
                  "ClusterRoleBinding": lambda n, s: self.rbac.delete_cluster_role_binding(s)}
        for kind, namespace, name in reversed(self._created_rbac):
            try:
                delete[kind](namespace, name)
            except ApiException as exc:
                if exc.status != 404:
                    self.log(f"stepgraph fleet: could not delete {kind} {name}: {exc.status} {exc.reason}")
        if self._created_rbac:
            self.cleaned.append(f"{len(self._created_rbac)} RBAC object(s)")
        self._jobs, self._created_rbac = [], []

    def _remove_namespaces(self) -> None:
        """Delete the runners' namespaces — what a runner left in its own goes with it — and await
        them gone (a namespace is Terminating until everything in it is)."""
        for name in self._namespaces:
            try:
                self.core.delete_namespace(name)
            except ApiException as exc:
                if exc.status != 404:
                    self.log(f"stepgraph fleet: could not delete namespace {name}: {exc.status} {exc.reason}")
        if self._namespaces:
            self.cleaned.append(f"{len(self._namespaces)} runner namespace(s)")
        mine = f"{objects.RUN_LABEL}={self.run_id}"
        give_up = self.clock() + 120
        while self.core.list_namespace(label_selector=mine).items and self.clock() < give_up:
            self.sleep(min(self.settings.poll_s, 1.0))
        left = [n.metadata.name for n in self.core.list_namespace(label_selector=mine).items]
        if left:
            self.log(f"stepgraph fleet: namespaces still terminating after 120 s: {', '.join(left)}")
        self._namespaces = []


def _has_failures(document: dict[str, Any]) -> bool:
    summary = document.get("summary") or {}
    return bool(summary.get("failed") or summary.get("error"))


def _exit(pod: Any) -> str:
    for status in (pod.status.container_statuses or []) if pod.status else []:
        term = status.state.terminated if status.state else None
        if term is not None:
            return f"exit {term.exit_code}, {term.reason or 'terminated'}"
    return "no container status"


def _tail(text: str, lines: int = 3) -> str:
    last = [line for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(last) if last else "(empty log)"
