"""`--target-option leftovers=remove|adopt`: what a run does with objects another run left behind.

Every object a run creates carries that run's label. Found by a later run, such an object is a
leftover, not a node prepared by hand: by default it is removed (and said so in the run's last
line); `adopt` keeps it and uses it as if it had been prepared.
"""

from __future__ import annotations

from collections.abc import Mapping

from stepgraph.dsl import TargetConfigError

CHOICES = ("remove", "adopt")


def leftover_option(options: Mapping[str, str]) -> str:
    value = options.get("leftovers", "remove")
    if value not in CHOICES:
        raise TargetConfigError(f"leftovers={value!r} — use remove (the default) or adopt")
    return value
