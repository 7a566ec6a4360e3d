"""A failed check → one block a reviewer can act on: where the step is written, what it says,
expected against observed (side by side per GPU when both are keyed), and the last observations
with their times on the target's clock. No traceback: the frames are the framework's, not the
scenario's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .eventually import CheckFailed, StepRefused


def failure_block(
    step_location: str, step_text: str, scenario: str, scenario_location: str, failure: CheckFailed | StepRefused
) -> str:
    lines = [f"{step_location}: {step_text}", f"  in scenario {scenario!r} ({scenario_location})"]
    if isinstance(failure, StepRefused):
        return "\n".join([*lines, f"  {failure}"])
    lines.append(f"  {failure.message}")
    lines += ["  " + line for line in compare(failure.expected, failure.observed, getattr(failure, "aligned", None))]
    if failure.history:
        lines.append("  last observations (time since the window opened):")
        lines += [f"    +{t:g} s  {_text(observed)}" for t, observed in failure.history]
    return "\n".join(lines)


def compare(expected: Any, observed: Any, aligned: Any = None) -> list[str]:
    """`expected: …` / `observed: …`, and a per-key table when both are mappings (per GPU), or when
    the expectation comes laid out on the observed keys (`aligned`, for a multiset)."""
    out = []
    if expected is not None:
        out.append(f"expected: {_text(expected)}")
    if observed is not None:
        out.append(f"observed: {_text(observed)}")
    if isinstance(aligned, Mapping) and isinstance(observed, Mapping):
        expected = aligned
    if isinstance(expected, Mapping) and isinstance(observed, Mapping):
        keys = sorted({*expected, *observed}, key=lambda k: (str(type(k)), k))
        rows = [("", "expected", "observed", "")] + [
            (str(k), _text(expected.get(k, "—")), _text(observed.get(k, "—")), "" if expected.get(k) == observed.get(k) else "✗")
            for k in keys
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        out += [("  ".join(cell.ljust(w) for cell, w in zip(r[:3], widths, strict=True)) + "  " + r[3]).rstrip() for r in rows]
    return out


def _text(value: Any) -> str:
    return str(value)
