"""The agent container's command line → `AgentCli` (the flags of contract §3.1, env substituted).

The DaemonSet runs `python /app/power_agent.py --safe-default-watts=$(SAFE_DEFAULT_WATTS)
--node-name=$(NODE_NAME) [--namespace=$(POD_NAMESPACE)] --prometheus-port=9100 --actuator=nvml|dcgm
[--dcgm-host … --dcgm-port … --dcgm-enforce …]`. Kubernetes expands `$(VAR)` from the container
env before exec; we do the same, then parse with argparse as the agent does. A bad command line
is a `CliError` (the container would exit 2 with argparse's message).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import NoReturn

GENERATION_ENV = "TWIN_AGENT_GENERATION"  # which generation the agent program plays (its image's ENV)
_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


class CliError(ValueError):
    """The agent's argparse would reject this command line."""


@dataclass(frozen=True)
class AgentCli:
    safe_default_watts: int
    node_name: str | None
    namespace: str | None
    prometheus_port: int
    actuator: str
    dcgm_host: str
    dcgm_port: int
    dcgm_enforce: bool


def expand(arg: str, env: dict[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: unknown variables stay as written."""
    return _VAR.sub(lambda m: env.get(m.group(1), m.group(0)), arg)


def _strict_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean, got {text!r}")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # never sys.exit inside the twin
        raise CliError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="power_agent.py", add_help=False)
    p.add_argument("--safe-default-watts", type=int, required=True)
    p.add_argument("--node-name")
    p.add_argument("--namespace")
    p.add_argument("--prometheus-port", type=int)
    p.add_argument("--actuator", choices=["nvml", "dcgm"], default="nvml")
    p.add_argument("--dcgm-host", default="nvidia-dcgm.gpu-operator.svc.cluster.local")
    p.add_argument("--dcgm-port", type=int, default=5555)
    p.add_argument("--dcgm-enforce", type=_strict_bool, default=False)
    return p


def parse(argv: list[str], env: dict[str, str]) -> AgentCli:
    """`argv` is the container's command + args; everything after `power_agent.py` is parsed."""
    args = [expand(a, env) for a in argv]
    start = next((i + 1 for i, a in enumerate(args) if a.endswith("power_agent.py")), 0)
    ns = _parser().parse_args(args[start:])
    port = ns.prometheus_port if ns.prometheus_port is not None else int(env.get("PROMETHEUS_PORT", "0") or 0)
    return AgentCli(
        safe_default_watts=ns.safe_default_watts,
        node_name=ns.node_name or env.get("NODE_NAME"),
        namespace=ns.namespace or None,
        prometheus_port=port,
        actuator=ns.actuator,
        dcgm_host=ns.dcgm_host,
        dcgm_port=ns.dcgm_port,
        dcgm_enforce=ns.dcgm_enforce,
    )
