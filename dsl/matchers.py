"""Matchers for what GPU acceptance checks compare: multisets, deltas since a baseline, per-key
"equals the baseline except these", and tolerances. Each returns a MatchResult; `.require()`
turns a mismatch into a CheckFailed that shows expected vs. observed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .eventually import CheckFailed


@dataclass(frozen=True)
class MatchResult:
    ok: bool
    expected: Any
    observed: Any
    detail: str = ""

    def __bool__(self) -> bool:
        return self.ok

    def require(self, what: str = "check") -> None:
        if not self.ok:
            message = f"{what} failed" + (f": {self.detail}" if self.detail else "")
            raise CheckFailed(message, expected=self.expected, observed=self.observed)


def multiset_equal(expected: Iterable[Hashable], observed: Iterable[Hashable]) -> MatchResult:
    """Same elements with the same counts, in any order (GPU assignment is nondeterministic)."""
    want, got = Counter(expected), Counter(observed)
    missing, extra = want - got, got - want
    detail = ", ".join(
        p
        for p in (
            f"missing {sorted(missing.elements(), key=repr)}" if missing else "",
            f"unexpected {sorted(extra.elements(), key=repr)}" if extra else "",
        )
        if p
    )
    return MatchResult(not missing and not extra, sorted(want.elements(), key=repr), sorted(got.elements(), key=repr), detail)


def align_multiset(expected: Iterable[Any], observed: Mapping[Any, Any]) -> dict[Any, Any]:
    """The expected multiset laid out on the observed keys: a key whose value is expected keeps it;
    the expected values left over go, smallest first, to the other keys in order (the pairing a
    reader checks first), and any beyond the keys are shown under "(no GPU)"."""
    left = Counter(expected)
    aligned: dict[Any, Any] = {}
    for key, value in sorted(observed.items(), key=lambda kv: repr(kv[0])):
        if left[value] > 0:
            left[value] -= 1
            aligned[key] = value
    spare = sorted(left.elements(), key=repr)
    for key in sorted((k for k in observed if k not in aligned), key=repr):
        aligned[key] = spare.pop(0) if spare else "—"
    if spare:
        aligned["(no GPU)"] = spare if len(spare) > 1 else spare[0]
    return aligned


def delta(baseline: Mapping[Any, float], current: Mapping[Any, float]) -> dict[Any, float]:
    """current − baseline per key (a key missing from the baseline counts from 0)."""
    return {k: current.get(k, 0) - baseline.get(k, 0) for k in set(baseline) | set(current)}


def delta_at_least(baseline: Mapping[Any, float], current: Mapping[Any, float], key: Any, minimum: float) -> MatchResult:
    grew = current.get(key, 0) - baseline.get(key, 0)
    return MatchResult(
        grew >= minimum, f"{key} grew by ≥ {minimum:g}", f"{key} grew by {grew:g} ({baseline.get(key, 0):g} → {current.get(key, 0):g})"
    )


def delta_exactly(baseline: Mapping[Any, float], current: Mapping[Any, float], key: Any, amount: float) -> MatchResult:
    grew = current.get(key, 0) - baseline.get(key, 0)
    return MatchResult(grew == amount, f"{key} grew by {amount:g}", f"{key} grew by {grew:g}")


def equal_except(baseline: Mapping[Any, Any], current: Mapping[Any, Any], exempt: Iterable[Any] = ()) -> MatchResult:
    """Every key not in `exempt` has its baseline value (e.g. every other GPU kept its cap)."""
    skip = set(exempt)
    keys = (set(baseline) | set(current)) - skip
    changed = sorted((k for k in keys if baseline.get(k) != current.get(k)), key=repr)
    return MatchResult(
        not changed,
        {k: baseline.get(k) for k in changed} or "unchanged",
        {k: current.get(k) for k in changed} or "unchanged",
        f"changed: {changed}" if changed else "",
    )


def within_tolerance(expected: float, observed: float, tolerance: float) -> MatchResult:
    return MatchResult(abs(observed - expected) <= tolerance, f"{expected:g} ± {tolerance:g}", observed)
