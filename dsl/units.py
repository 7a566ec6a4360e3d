"""Units as types: text such as "300 W" or "2 agent ticks" → Power / Duration values.

Both types validate inside pydantic models (from text or numbers), compare by their normalised
amount (300 W == 300000 mW), and render back to one canonical spelling, so a scenario converted
between syntaxes keeps the same meaning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import core_schema

NUMBER = r"\d+(?:\.\d+)?"
POWER_TEXT = rf"{NUMBER}\s*(?:mW|W|kW)"
DURATION_TEXT = rf"{NUMBER}\s*(?:ms|s|sec|seconds?|min|minutes?|(?:agent\s+)?ticks?)"

_POWER_RE = re.compile(rf"^\s*({NUMBER})\s*(mW|W|kW)\s*$")
_DURATION_RE = re.compile(rf"^\s*({NUMBER})\s*(ms|s|sec|seconds?|min|minutes?|(?:agent\s+)?ticks?)\s*$")
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
        return core_schema.no_info_plain_validator_function(cls.parse, serialization=core_schema.plain_serializer_function_ser_schema(str))

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
            return cls(round(value * 1000))
        if isinstance(value, str) and (m := _POWER_RE.match(value)):
            return cls(round(float(m.group(1)) * _MILLIWATTS_PER[m.group(2)]))
        raise ValueError(f"{value!r} is not a power — write it like 300 W or 300000 mW")

    @property
    def watts(self) -> float:
        return self.milliwatts / 1000

    def __str__(self) -> str:
        if self.milliwatts % 1000 == 0:
            return f"{self.milliwatts // 1000} W"
        return f"{self.milliwatts} mW"


@dataclass(frozen=True)
class Duration(_TextType):
    """A span of time in seconds or in agent ticks; ticks become seconds only at run time."""

    amount: float
    unit: str = "s"  # "s" or "tick"
    JSON_PATTERN = rf"^\s*{DURATION_TEXT}\s*$"

    @classmethod
    def parse(cls, value: Any) -> Duration:
        if isinstance(value, Duration):
            return value
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a duration — write it like 90 s, 500 ms or 2 agent ticks")
        if isinstance(value, int | float):
            return cls(float(value), "s")
        if isinstance(value, str) and (m := _DURATION_RE.match(value)):
            amount, unit = float(m.group(1)), m.group(2)
            if unit.endswith(("tick", "ticks")):
                return cls(amount, "tick")
            return cls(amount * _SECONDS_PER[unit], "s")
        raise ValueError(f"{value!r} is not a duration — write it like 90 s, 500 ms or 2 agent ticks")

    @classmethod
    def seconds_of(cls, amount: float) -> Duration:
        return cls(float(amount), "s")

    def to_seconds(self, tick_seconds: float) -> float:
        """Seconds on a target whose agent ticks last `tick_seconds`."""
        return self.amount * tick_seconds if self.unit == "tick" else self.amount

    def __str__(self) -> str:
        if self.unit == "tick":
            return f"{_number_text(self.amount)} agent tick{'' if self.amount == 1 else 's'}"
        return f"{_number_text(self.amount)} s"
