"""Per-step cost of the time windows: a check under `within` (retried until it holds) against the
same check under `throughout` (observed at every poll of the window), on a virtual clock so only
the language's own overhead is measured, not waiting.

    .venv/bin/python bench/bench_windows.py            # 2 000 steps each, window 2 agent ticks, poll 1 s
"""

from __future__ import annotations

import sys
import time

from stepgraph.dsl import Bindings, Duration, FinalizerStack, ManualClock, Params, Registry, Session, StepContext
from stepgraph.dsl.execute import execute_call


class NoArgs(Params):
    pass


def main(steps: int = 2000) -> int:
    reg = Registry()
    calls = [0]

    @reg.then("bench.holds", "it holds")
    def holds(ctx: StepContext, p: NoArgs) -> None:
        calls[0] += 1

    decl = reg.steps["bench.holds"]
    ctx = StepContext(session=Session(clock=ManualClock(), tick_seconds=15), bindings=Bindings(), finalizers=FinalizerStack())
    window = Duration(2, "tick")
    results = {}
    for name, kwargs in (("plain", {}), ("within", {"within": window}), ("throughout", {"throughout": window})):
        calls[0] = 0
        started = time.perf_counter()
        for _ in range(steps):
            execute_call(decl, NoArgs(), ctx, **kwargs)
        elapsed = time.perf_counter() - started
        results[name] = (elapsed / steps * 1e6, calls[0] / steps)
    for name, (us, observations) in results.items():
        print(f"{name:10} {us:8.1f} µs per step, {observations:4.0f} observation(s) per step")
    per_obs = (results["throughout"][0] - results["plain"][0]) / max(results["throughout"][1] - 1, 1)
    print(f"throughout over a 30 s window at 1 s polls: {results['throughout'][0] / results['within'][0]:.1f}× within; "
          f"{per_obs:.1f} µs per extra observation")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:])))
