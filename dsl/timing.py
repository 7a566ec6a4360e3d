"""The causal minimums checks declare (`min_within=`): the shortest `within` in which what a check
waits for can happen at all. Static check 8 rejects a shorter window, which could only time out."""

from __future__ import annotations

from .units import Duration

#: The Power Agent acts once per tick: a cap, a gauge or a counter changes at the next tick.
AGENT_TICK = Duration(1, "tick")
#: A planner patches worker pods once per tick (throughput_adjustment_interval_seconds).
PLANNER_TICK = Duration(1, "planner-tick")
#: A pod is scheduled, its containers start and report Running: seconds on any node.
POD_START = Duration(5, "s")
