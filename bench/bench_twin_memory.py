"""The twin's memory against the number of scenarios it has served → one ratio: flat is 1.0.

    .venv/bin/python bench/bench_twin_memory.py [--cycles 300 3000] [--repeat 1]

Each sample is a child process running `twin_churn.py` (scenario-shaped cycles on one twin:
pods created, patched and deleted in the shared test namespace, their Events, a minute of the
twin's clock each) and its peak RSS from wait4; the large and the small run alternate. A second
row sets the large run beside a twin that served no cycle at all.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import Figure, interleave, run_process, table

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, nargs=2, default=[300, 3000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    small, large = args.cycles

    def peak(cycles: int) -> float:
        return run_process([sys.executable, str(HERE / "twin_churn.py"), str(cycles)], HERE).peak_rss_mib

    figure = interleave(Figure(f"twin peak RSS after {large:,} scenario-shaped cycles", f"after {small:,} cycles",
                               "MiB", target=1.1), lambda: peak(large), lambda: peak(small), args.repeat)
    # The floor: the same process with a twin that served nothing; the difference is what the
    # cycles keep (or leave of their peak) beyond the twin itself.
    floor = Figure(f"twin peak RSS after {large:,} scenario-shaped cycles (the runs above)", "a twin after 0 cycles",
                   "MiB", ours=list(figure.ours), base=[peak(0) for _ in range(args.repeat)])
    print(table([figure, floor]))


if __name__ == "__main__":
    main()
