"""Per-step cost of the time windows: a check under `within` (retried until it holds) against the
same check under `throughout` (observed at every poll of the window), and two checks judged
together in one window (`… all of these hold together:`, YAML `expect … together`) against the
same two checks one after the other, on a virtual clock so only the language's own overhead is
measured, not waiting.

    .venv/bin/python bench/bench_windows.py                 # 2 000 steps each, window 2 agent ticks, poll 1 s
    .venv/bin/python bench/bench_windows.py --clock cpu     # CPU time of this process (for a loaded machine)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from stepgraph.dsl import Bindings, Duration, FinalizerStack, ManualClock, Params, Registry, Session, StepContext
from stepgraph.dsl.execute import execute_call, execute_joint
from stepgraph.dsl.ir import JointCheck, StepCall
from stepgraph.dsl.phrases import Window


class NoArgs(Params):
    pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="steps per row (default 2000)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="wall time or this process's CPU time")
    args = parser.parse_args(argv)
    timer = time.process_time if args.clock == "cpu" else time.perf_counter

    reg = Registry()
    calls = [0]

    @reg.then("bench.holds", "it holds")
    def holds(ctx: StepContext, p: NoArgs) -> None:
        calls[0] += 1

    @reg.then("bench.also_holds", "it also holds")
    def also_holds(ctx: StepContext, p: NoArgs) -> None:
        calls[0] += 1

    decl, other = reg.steps["bench.holds"], reg.steps["bench.also_holds"]
    ctx = StepContext(session=Session(clock=ManualClock(), tick_seconds=15), bindings=Bindings(), finalizers=FinalizerStack())
    window = Duration(2, "tick")
    pair = tuple(StepCall(decl=d, step_id=d.id, params=NoArgs()) for d in (decl, other))

    def in_turn(**kwargs: Duration) -> Callable[[], None]:
        def run() -> None:
            execute_call(decl, NoArgs(), ctx, **kwargs)
            execute_call(other, NoArgs(), ctx, **kwargs)
        return run

    def together(mode: str) -> Callable[[], None]:
        joint = JointCheck(Window(mode, window), pair)
        return lambda: execute_joint(joint, [ctx, ctx]) and None

    rows: dict[str, Callable[[], object]] = {
        "plain": lambda: execute_call(decl, NoArgs(), ctx),
        "within": lambda: execute_call(decl, NoArgs(), ctx, within=window),
        "throughout": lambda: execute_call(decl, NoArgs(), ctx, throughout=window),
        "2 in turn, within": in_turn(within=window),
        "2 together, within": together("within"),
        "2 in turn, throughout": in_turn(throughout=window),
        "2 together, throughout": together("throughout"),
    }
    results = {}
    for name, run in rows.items():
        calls[0] = 0
        started = timer()
        for _ in range(args.steps):
            run()
        elapsed = timer() - started
        results[name] = (elapsed / args.steps * 1e6, calls[0] / args.steps)
    print(f"{args.clock} time, {args.steps} steps per row, window {window} at 1 s polls")
    print(f"{'':24} {'µs/step':>9} {'check calls/step':>17} {'µs/check call':>14}")
    for name, (us, checks) in results.items():
        print(f"{name:24} {us:9.1f} {checks:17.0f} {us / checks:14.2f}")
    per_obs = (results["throughout"][0] - results["plain"][0]) / max(results["throughout"][1] - 1, 1)
    print(f"throughout: {results['throughout'][0] / results['within'][0]:.1f}× within; {per_obs:.1f} µs per extra observation")
    print(f"together vs in turn: within {results['2 together, within'][0] / results['2 in turn, within'][0]:.2f}×, "
          f"throughout {results['2 together, throughout'][0] / results['2 in turn, throughout'][0]:.2f}×; "
          f"together within vs one within: {results['2 together, within'][0] / results['within'][0]:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
