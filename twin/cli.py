"""`stepgraph twin up` → a twin cluster on loopback until interrupted; prints the kubeconfig path.

    stepgraph twin up [--seed N] [--port P] [--kubeconfig PATH] [--world FILE] [--agent PATH]
                      [--clock real|virtual|scaled[:RATE]] [--host-image PATTERN]…

`--agent PATH` runs the agent DaemonSet's container as the real program in PATH (a folder holding
`power_agent.py`, or `reference` for the twin's own agent), in the world given (default Path B).
`--host-image busybox` runs busybox containers' command lines as processes of this machine (a
real shell and coreutils, e.g. for the official client's e2e tests).

Runs on the real clock by default (pods start after their start-up delay in wall time), so
`kubectl --kubeconfig <path> get pods` and the Python client behave as against a cluster.
Usage errors: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from . import Twin
from .apiserver.kubeconfig import write_kubeconfig
from .node import NodeConfig


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"stepgraph twin: {message} — see `stepgraph twin up --help`\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="stepgraph twin", description="Run the embedded twin cluster.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    up = sub.add_parser("up", help="start a twin API server and GPU node on 127.0.0.1")
    up.add_argument("--seed", type=int, default=0, help="drives every random choice (default 0)")
    up.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    up.add_argument("--kubeconfig", type=Path, help="where to write the kubeconfig (default: a temp dir)")
    up.add_argument("--world", type=Path, help="a world file for the GPU side (agent, DGDs, faults)")
    up.add_argument("--agent", help="run the agent as this real program: a folder holding power_agent.py, or `reference`")
    up.add_argument("--clock", type=_clock, default="real", help="real (default), virtual, or scaled[:RATE] (75 by default)")
    up.add_argument("--startup-delay", type=float, default=2.0, help="seconds from scheduling to Running")
    up.add_argument("--no-cdi", action="store_true", help="accept concrete NVIDIA_VISIBLE_DEVICES (not CDI mode)")
    up.add_argument("--host-image", action="append", default=[], metavar="PATTERN",
                    help="containers of images matching PATTERN (e.g. busybox) run their command lines as processes "
                         "of this machine, with its files and commands (repeatable)")
    return p


def _clock(text: str) -> str:
    if text in ("real", "virtual") or text == "scaled" or text.startswith("scaled:"):
        return text
    raise argparse.ArgumentTypeError(f"invalid clock {text!r}: use real, virtual or scaled[:RATE]")


def build(args: argparse.Namespace) -> Twin:
    twin = _build(args)
    for pattern in args.host_image:
        host_image(twin, pattern)
    return twin


def host_image(twin: Twin, pattern: str) -> None:
    """Run containers of `pattern` as this machine's processes: the image's files are the machine's
    own (its root, also seen at /host; the working folder `/`), so `sh`, `date`, `gzip` are real."""
    from .process.runtime import ContainerMatch, Program
    twin.processes.register(twin.workloads, f"host-image {pattern}", ContainerMatch(image=pattern),
                            Program(root=Path("/"), mount="/host"))


def _build(args: argparse.Namespace) -> Twin:
    if args.world is not None or args.agent is not None:
        from .world import WorldError, agent_program_dir, load_world, profile  # the GPU side, only when asked for
        from .world_install import build_twin
        try:
            world = load_world(args.world or profile("path-b"))
            if args.agent is not None:
                world.agent.program = str(agent_program_dir(args.agent, Path.cwd()))
        except (WorldError, OSError) as exc:
            raise SystemExit(_fail(str(exc))) from None
        except ValueError as exc:
            raise SystemExit(_fail(f"--agent {args.agent}: {exc}")) from None
        if world.agent.program is not None and args.clock == "virtual":
            raise SystemExit(_fail("a real agent program cannot run on the virtual clock — use --clock real or scaled"))
        return build_twin(world, clock=args.clock, port=args.port)
    node = NodeConfig(startup_delay=args.startup_delay, cdi_mode=not args.no_cdi)
    return Twin(seed=args.seed, clock=args.clock, node=node, port=args.port)


def _fail(message: str) -> int:
    print(f"stepgraph twin: {message}", file=sys.stderr)
    return 2


@contextmanager
def _stop_signals() -> Iterator[socket.socket]:
    """A socket that turns readable at the first SIGINT or SIGTERM. The kernel may hand the signal
    to any of the process's threads; a main thread blocked in a lock (`Event.wait`) is then never
    woken to run a Python handler, but the signal module writes every signal to its wakeup fd
    from whichever thread took it."""
    readable, writable = socket.socketpair()
    writable.setblocking(False)
    previous_fd = signal.set_wakeup_fd(writable.fileno())
    # the handler does nothing: the wakeup fd notes the signal, and no KeyboardInterrupt cuts a start short
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield readable
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(previous_fd)
        readable.close()
        writable.close()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.port and not 0 < args.port < 65536:
        return _fail(f"--port {args.port} is not a TCP port — use 1..65535 or 0 for a free one")
    with _stop_signals() as stop_asked:  # before the path is printed: callers may signal at once
        try:
            twin = build(args)
            twin.start()
        except OSError as exc:
            return _fail(f"cannot start the API server: {exc} — try another --port")
        except RuntimeError as exc:
            return _fail(f"{exc} — try another --port")
        try:
            path = twin.kubeconfig_path
            if args.kubeconfig is not None:
                path = write_kubeconfig(args.kubeconfig, twin.base_url)
            print(path, flush=True)
            print(f"twin API server at {twin.base_url} (seed {twin.seed}); Ctrl-C to stop", file=sys.stderr, flush=True)
            stop_asked.recv(1)
        finally:
            twin.stop()
            if args.kubeconfig is not None:
                args.kubeconfig.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
