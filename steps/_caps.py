"""Per-GPU caps → a check against the topology's multiset of caps.

GPU assignment is the device plugin's choice (Finding #8), so caps are compared in any GPU order;
the failure still shows the per-GPU reading, which is what a person debugging wants to see.
"""

from __future__ import annotations

from collections.abc import Mapping

from stepgraph.dsl import CheckFailed, align_multiset, multiset_equal

from ._parsers import parse_watts_list


def require_caps_multiset(what: str, expected: str, observed: Mapping[int, int | None]) -> None:
    """Raise CheckFailed unless the observed per-GPU caps are the `expected` list ("350, 325×3, …") in any order.
    A GPU whose cap could not be read is None: it matches no expected cap."""
    wanted = parse_watts_list(expected)
    result = multiset_equal(wanted, observed.values())
    if not result:
        raise CheckFailed(f"{what} in any GPU order: {result.detail}", expected=result.expected, observed=dict(sorted(observed.items())),
                          aligned=align_multiset(wanted, observed))
