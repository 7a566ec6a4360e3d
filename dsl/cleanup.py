"""What a run cleaned up, and what it left: the ledger behind every run's last line.

Scenario compensations, run-end checks and the target's own verification report here; the
plugin prints `summary()` as the run's last line, so an operator reads at a glance whether the
node was left as found.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .finalizers import FinalizerStack


@dataclass
class CleanupLedger:
    undone: Counter[str] = field(default_factory=Counter)  # step id → compensations that ran
    failed: list[str] = field(default_factory=list)  # compensations that raised
    left: list[str] = field(default_factory=list)  # what is known to be still there
    verified_by: list[str] = field(default_factory=list)  # the checks that ran at the end
    notes: list[str] = field(default_factory=list)  # e.g. what another run left and this one removed
    interrupted: bool = False  # by Ctrl-C or SIGTERM
    exited: bool = False  # by pytest.exit (pytest reports it through the same hook as an interrupt)
    pending_interrupt: BaseException | None = None  # a Ctrl-C during a teardown, raised once it is done

    @property
    def stopped_by(self) -> str | None:
        """What ended the run before its last test, or None. From then on pytest tears fixtures
        down from its session end, where cleanup reports a failure instead of raising it."""
        return "the interrupt" if self.interrupted else "pytest.exit" if self.exited else None

    def record(self, stack: FinalizerStack) -> None:
        """Take in what one finalizer stack did (after its `run`, also when that raised)."""
        for description in stack.ran:
            self.undone[description.split(" (", 1)[0].removeprefix("compensate ")] += 1
        self.failed += stack.failed
        self.left += [f"not undone: {d}" for d in stack.left]

    def leftover(self, what: str) -> None:
        self.left.append(what)

    def summary(self) -> str:
        undone = ", ".join(f"{what} ×{n}" for what, n in sorted(self.undone.items())) or "nothing to undo"
        if self.notes:
            undone += "; " + "; ".join(self.notes)
        checks = f"; checked by {', '.join(self.verified_by)}" if self.verified_by else ""
        failed = f"; {len(self.failed)} compensation(s) FAILED" if self.failed else ""
        if self.left:
            return f"stepgraph cleanup: LEFT BEHIND: {'; '.join(self.left)} — remove these by hand (undone: {undone}{failed})"
        if not self.verified_by:
            return f"stepgraph cleanup: undone: {undone}{failed}"
        return f"stepgraph cleanup: undone: {undone}{failed}{checks}: nothing left behind"
