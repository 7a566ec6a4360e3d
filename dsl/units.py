"""Units as types: text such as "300 W" or "2 agent ticks" → Power / Duration values.

Both types validate inside pydantic models (from text or numbers), compare by their normalised
amount (300 W == 300000 mW), and render back to one canonical spelling, so a scenario converted
between syntaxes keeps the same meaning.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator, GetCoreSchemaHandler, GetJsonSchemaHandler, WithJsonSchema
from pydantic_core import core_schema

NUMBER = r"\d+(?:\.\d+)?"
POWER_TEXT = rf"{NUMBER}\s*(?:mW|W|kW)"
_DURATION_UNITS = r"ms|s|sec|seconds?|min|minutes?|(?:agent\s+|planner\s+)?ticks?"
DURATION_TEXT = rf"{NUMBER}\s*(?:{_DURATION_UNITS})"
#: A planner tick when the target does not say (Dynamo's throughput_adjustment_interval_seconds default).
DEFAULT_PLANNER_TICK_SECONDS = 60.0

#: The longest wait or window a scenario may ask for, per unit: a day, or as many ticks as a day holds
#: at the usual tick lengths. Longer is a typo (a week, 10^23 ticks) that would hang the run.
MAX_DURATION = {"s": 86_400.0, "tick": 10_000.0, "planner-tick": 1_440.0}
#: The largest power a step may name: far above any GPU or node, far below an integer overflow.
MAX_MILLIWATTS = 100_000_000

_POWER_RE = re.compile(rf"^\s*({NUMBER})\s*(mW|W|kW)\s*$")
_DURATION_RE = re.compile(rf"^\s*({NUMBER})\s*({_DURATION_UNITS})\s*$")
_MILLIWATTS_PER = {"mW": 1, "W": 1000, "kW": 1_000_000}
_SECONDS_PER = {"ms": 0.001, "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "minute": 60.0, "minutes": 60.0}


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class _TextType:
    """Shared pydantic glue: validate from text (or a number in the base unit), dump as text."""

    JSON_PATTERN = ""

    @classmethod
    def parse(cls, value: Any) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        serialize = core_schema.plain_serializer_function_ser_schema(str)
        return core_schema.no_info_plain_validator_function(cls.bounded, serialization=serialize)

    @classmethod
    def bounded(cls, value: Any) -> Any:
        """`parse`, then refuse a value past the sane bound (a step parameter)."""
        parsed = cls.parse(value)
        problem = parsed.bound_problem()
        if problem is not None:
            raise ValueError(problem)
        return parsed

    def bound_problem(self) -> str | None:  # pragma: no cover - overridden
        raise NotImplementedError

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        return {"anyOf": [{"type": "string", "pattern": cls.JSON_PATTERN}, {"type": "number", "minimum": 0}]}


@dataclass(frozen=True)
class Power(_TextType):
    """Electrical power, kept in whole milliwatts (NVML's unit). Plain numbers mean watts."""

    milliwatts: int
    JSON_PATTERN = rf"^\s*{POWER_TEXT}\s*$"

    @classmethod
    def parse(cls, value: Any) -> Power:
        if isinstance(value, Power):
            return value
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a power — write it like 300 W or 300000 mW")
        if isinstance(value, int | float):
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{value!r} is not a power — write a number of watts ≥ 0, like 300 W or 300000 mW")
            return cls(round(value * 1000))
        if isinstance(value, str) and (m := _POWER_RE.match(value)):
            if not math.isfinite(float(m.group(1))):
                raise ValueError(f"{value!r} is not a power — write it like 300 W or 300000 mW")
            return cls(round(float(m.group(1)) * _MILLIWATTS_PER[m.group(2)]))
        raise ValueError(f"{value!r} is not a power — {_power_hint(value)}")

    def bound_problem(self) -> str | None:
        if self.milliwatts > MAX_MILLIWATTS:
            return f"{self} is over {MAX_MILLIWATTS // 1_000_000} kW — no GPU or node draws that; check the number"
        return None

    @property
    def watts(self) -> float:
        return self.milliwatts / 1000

    def __str__(self) -> str:
        if self.milliwatts % 1000 == 0:
            return f"{self.milliwatts // 1000} W"
        return f"{self.milliwatts} mW"


@dataclass(frozen=True)
class Duration(_TextType):
    """A span of time in seconds, agent ticks or planner ticks; ticks become seconds only at run time."""

    amount: float
    unit: str = "s"  # "s", "tick" (an agent tick) or "planner-tick"
    JSON_PATTERN = rf"^\s*{DURATION_TEXT}\s*$"

    @classmethod
    def parse(cls, value: Any) -> Duration:
        if isinstance(value, Duration):
            return value
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a duration — {_duration_hint(value)}")
        if isinstance(value, int | float):
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{value!r} is not a duration — {_duration_hint(value)}")
            return cls(float(value), "s")
        if isinstance(value, str) and (m := _DURATION_RE.match(value)):
            amount, unit = float(m.group(1)), m.group(2)
            if unit.startswith("planner"):
                return cls(amount, "planner-tick")
            if unit.endswith(("tick", "ticks")):
                return cls(amount, "tick")
            return cls(amount * _SECONDS_PER[unit], "s")
        raise ValueError(f"{value!r} is not a duration — {_duration_hint(value)}")

    def bound_problem(self) -> str | None:
        """Why this duration cannot be meant (a wait or window that would outlast any run), else None."""
        limit = MAX_DURATION[self.unit]
        if not self.amount <= limit:  # also catches inf from a number with hundreds of digits
            return f"{self} is longer than a test can wait — at most {_number_text(MAX_DURATION['s'])} s (a day), " \
                   f"{_number_text(MAX_DURATION['tick'])} agent ticks or {_number_text(MAX_DURATION['planner-tick'])} planner ticks"
        return None

    @classmethod
    def seconds_of(cls, amount: float) -> Duration:
        return cls(float(amount), "s")

    def to_seconds(self, tick_seconds: float, planner_tick_seconds: float = DEFAULT_PLANNER_TICK_SECONDS) -> float:
        """Seconds on a target whose agent ticks last `tick_seconds` (and planner ticks `planner_tick_seconds`)."""
        if self.unit == "tick":
            return self.amount * tick_seconds
        if self.unit == "planner-tick":
            return self.amount * planner_tick_seconds
        return self.amount

    def __str__(self) -> str:
        plural = "" if self.amount == 1 else "s"
        if self.unit == "tick":
            return f"{_number_text(self.amount)} agent tick{plural}"
        if self.unit == "planner-tick":
            return f"{_number_text(self.amount)} planner tick{plural}"
        return f"{_number_text(self.amount)} s"


def _duration_hint(value: Any) -> str:
    """What to write instead of a duration in a unit we do not know (`2 tiks`, `90 sec.`, `1 h`)."""
    number = re.match(rf"^\s*({NUMBER})", value) if isinstance(value, str) else None
    if number is None:
        return "write it like 90 s, 500 ms, 2 min, 2 agent ticks or 1 planner tick"
    unit = re.sub(rf"^\s*{NUMBER}\s*", "", value).strip()
    words = {"ms": "ms", "s": "s", "min": "min", "agent ticks": "agent ticks", "planner ticks": "planner ticks"}
    if unit in _MILLIWATTS_PER or unit.lower() in ("w", "mw", "kw"):
        return "that is a power, and this takes a duration: write it like 90 s, 500 ms, 2 min, 2 agent ticks or 1 planner tick"
    if unit in ("h", "hr", "hour", "hours"):
        return f"write hours in minutes, e.g. {_number_text(float(number.group(1)) * 60)} min"
    import difflib

    close = difflib.get_close_matches(unit, [*words, "sec", "seconds", "minutes", "ticks", "agent tick", "planner tick"], n=1, cutoff=0.5)
    if unit and close:
        return f"did you mean {close[0]!r}? Durations are written like 90 s, 500 ms, 2 min, 2 agent ticks or 1 planner tick"
    return "write it like 90 s, 500 ms, 2 min, 2 agent ticks or 1 planner tick"


def _power_hint(value: Any) -> str:
    unit = re.sub(rf"^\s*{NUMBER}\s*", "", value).strip() if isinstance(value, str) and re.match(rf"^\s*{NUMBER}", value) else ""
    if unit.lower() in ("w", "mw", "kw", "watt", "watts", "milliwatts"):
        right = {"w": "W", "watt": "W", "watts": "W", "mw": "mW", "milliwatts": "mW", "kw": "kW"}[unit.lower()]
        return f"did you mean {right!r}? Write it like 300 W or 300000 mW"
    if isinstance(value, str) and _DURATION_RE.match(value):
        return "that is a duration, and this takes a power: write it like 300 W or 300000 mW"
    return "write it like 300 W or 300000 mW"


def whole_watts(value: Any) -> int:
    """A power in whole watts (an annotation, an NVML limit in W): `280`, `280 W` or `280000 mW` → 280."""
    power = Power.bounded(value)
    if power.milliwatts % 1000:
        raise ValueError(f"{value!r} is not a whole number of watts — this takes whole watts, e.g. 280 W or 280000 mW")
    return power.milliwatts // 1000


#: A step parameter in whole watts that reads `280 W` or `280000 mW` (phrase placeholder `{watts:watts}`).
Watts = Annotated[
    int,
    BeforeValidator(whole_watts),
    WithJsonSchema({"anyOf": [{"type": "string", "pattern": rf"^\s*{POWER_TEXT}\s*$"}, {"type": "integer", "minimum": 0}]}),
]
