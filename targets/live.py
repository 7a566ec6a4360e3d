"""`--target live`: a real 8-GPU node, opt-in only → a session with the real clock and capabilities.

Without `STEPGRAPH_LIVE=1` (or the seed's `RUN_MULTI_DGD_LIVE=1`) the target offers no
capabilities, so every live scenario is skipped before any setup runs and a collect-only run is a
clean no-op. Opted in but misconfigured (no `TEST_NODE`, no credentials, a node that does not
exist) raises `TargetConfigError`: one line, exit code 2. Path A is detected once, like the seed,
by listing planner pods in the test namespace; DCGM availability and the agent and planner
generations come from the environment (see `live_settings`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import ClassVar

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError

from stepgraph.dsl import DEFAULT_TICK_SECONDS, RealClock, Session, TargetConfigError, TargetSession

from .leftovers import leftover_option
from .live_settings import LiveConfigError, LiveSettings

PLANNER_SELECTOR = "nvidia.com/dynamo-component-type=planner,purpose=power-aware-multi-dgd-test"


def _api(settings: LiveSettings) -> client.ApiClient:
    try:
        if settings.kubeconfig:
            return config.new_client_from_config(config_file=settings.kubeconfig)
        cfg = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=cfg)
            return client.ApiClient(cfg)
        except ConfigException:
            return config.new_client_from_config()
    except (ConfigException, OSError) as exc:
        raise TargetConfigError(
            f"live target: no Kubernetes credentials ({exc}) — set KUBECONFIG or run inside the cluster"
        ) from None


def probe_path_a(api: client.ApiClient, settings: LiveSettings) -> bool:
    """Path A iff at least one planner pod of the test exists in the namespace (as the seed); a
    run namespace of the run's own (STEPGRAPH_RUN_NAMESPACE) must exist."""
    core = client.CoreV1Api(api)
    try:
        if settings.node:  # a per-node run has none: its nodes come from the selector
            core.read_node(settings.node)
    except ApiException as exc:
        if exc.status == 404:
            raise TargetConfigError(
                f"live target: TEST_NODE={settings.node!r} is not a node of this cluster — check `kubectl get nodes`"
            ) from None
        raise TargetConfigError(f"live target: cannot read node {settings.node!r}: {exc.status} {exc.reason}") from None
    except (OSError, HTTPError) as exc:
        raise TargetConfigError(f"live target: the API server is unreachable ({exc}) — check KUBECONFIG") from None
    if settings.run_namespace:
        try:
            core.read_namespace(settings.run_namespace)
        except ApiException as exc:
            what = "is not a namespace of this cluster — create it" if exc.status == 404 else \
                f"cannot be read ({exc.status} {exc.reason}) — check the runner's rights"
            raise TargetConfigError(f"live target: STEPGRAPH_RUN_NAMESPACE={settings.run_namespace!r} {what}") from None
        except (OSError, HTTPError) as exc:
            raise TargetConfigError(f"live target: the API server is unreachable ({exc}) — check KUBECONFIG") from None
    try:
        # Path A's planners manage the DGDs of their own namespace: they count only where this
        # run will deploy its DGDs.
        return bool(core.list_namespaced_pod(settings.work_namespace, label_selector=PLANNER_SELECTOR, limit=1).items)
    except (ApiException, OSError, HTTPError):
        return False


class LiveTarget:
    """The `live` target (entry point `stepgraph.targets: live`)."""

    name = "live"
    #: Every `--target-option` key the live target takes (the language rejects any other).
    options: ClassVar[dict[str, str]] = {
        "manifests": "the folder of the node's manifests (default examples/manifests/<variant>)",
        "leftovers": "remove or adopt",
    }

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = dict(os.environ if env is None else env)
        self._settings: LiveSettings | None = None
        self._path_a: bool | None = None

    def configure(self, options: Mapping[str, str]) -> None:
        """Validate the environment (and, when opted in, reach the node) before collection."""
        if self.settings().opted_in:
            self._detect()

    def settings(self) -> LiveSettings:
        if self._settings is None:
            try:
                self._settings = LiveSettings.from_env(self._env)
            except LiveConfigError as exc:
                raise TargetConfigError(f"live target: {exc}") from None
        return self._settings

    def _detect(self) -> bool:
        if self._path_a is None:
            settings = self.settings()
            self._path_a = probe_path_a(_api(settings), settings) if settings.opted_in else False
        return self._path_a

    @property
    def capabilities(self) -> frozenset[str]:
        """Empty unless opted in; else what the node offers (probed once)."""
        settings = self.settings()
        if not settings.opted_in:
            return frozenset()
        return frozenset(settings.capabilities(path_a=self._detect()))

    def nodes(self, selector: str) -> list[str]:
        """The cluster's nodes matching the label selector (`kubectl get nodes -l SELECTOR`)."""
        settings = self.settings()
        if not settings.opted_in:
            raise TargetConfigError("live target: --nodes lists a live cluster's nodes — opt in with STEPGRAPH_LIVE=1")
        try:
            found = client.CoreV1Api(_api(settings)).list_node(label_selector=selector).items
        except ApiException as exc:
            raise TargetConfigError(f"live target: cannot list nodes -l {selector!r}: {exc.status} {exc.reason}") from None
        except (OSError, HTTPError) as exc:
            raise TargetConfigError(f"live target: the API server is unreachable ({exc}) — check KUBECONFIG") from None
        return sorted(n.metadata.name for n in found)

    def start(self, options: Mapping[str, str]) -> TargetSession:
        settings = self.settings()
        caps = set(self.capabilities)
        facts = {
            "target": "live",
            "opted_in": settings.opted_in,
            "node": settings.node,
            "namespace": settings.namespace,
            "run_namespace": settings.work_namespace,
            "variant": settings.variant,
            "manifests": options.get("manifests"),  # None: the manifests shipped for the variant
            "path": ("A" if "path-a" in caps else "B") if settings.opted_in else None,
            "dcgm": settings.dcgm,
            "agent_generation": settings.agent_generation,
            "planner_generation": settings.planner_generation,
            "metrics_via": settings.metrics_via,
            "nvml_via": settings.nvml_via,
            "leftovers": leftover_option(options),
            "pin_node": settings.pin_node,
        }
        return Session(
            clock=RealClock(),
            kubeconfig=settings.kubeconfig,
            tick_seconds=DEFAULT_TICK_SECONDS,
            capabilities=caps,
            facts=facts,
        )

    def stop(self, session: TargetSession) -> None:
        return None
