"""The kubelets of a multi-node twin → one `PodRuntime` for the API server: each pod's log, exec
and proxy go to the kubelet of the node it is bound to (as the real API server dials that node's
kubelet)."""

from __future__ import annotations

from typing import Any

from .apiserver.streams import ExecOutput, ExecProcess, ExecRequest
from .kubelet import Kubelet


class NodeRuntimes:
    """Routes pod I/O by `spec.nodeName`; an unbound pod goes to the first kubelet, which answers
    as a kubelet does for a container that has not started."""

    def __init__(self, kubelets: dict[str, Kubelet]) -> None:
        self.kubelets = kubelets
        self._first = next(iter(kubelets.values()))

    def _of(self, pod: dict) -> Kubelet:
        return self.kubelets.get((pod.get("spec") or {}).get("nodeName") or "", self._first)

    def logs(self, pod: dict, container: str, previous: bool = False) -> list[tuple[float, str]]:
        return self._of(pod).logs(pod, container, previous)

    def ensure_running(self, pod: dict, container: str) -> None:
        self._of(pod).ensure_running(pod, container)

    def follow_logs(self, pod: dict, container: str, fn: Any) -> Any:
        return self._of(pod).follow_logs(pod, container, fn)

    def exec(self, pod: dict, container: str, argv: list[str], stdin: bytes | None) -> Any:
        return self._of(pod).exec(pod, container, argv, stdin)

    def exec_stream(self, pod: dict, container: str, request: ExecRequest, output: ExecOutput) -> ExecProcess:
        return self._of(pod).exec_stream(pod, container, request, output)

    def proxy(self, pod: dict, port: int | None, path: str) -> tuple[int, str, bytes] | None:
        return self._of(pod).proxy(pod, port, path)

    def forward_port(self, pod: dict, port: int) -> int | None:
        return self._of(pod).forward_port(pod, port)
