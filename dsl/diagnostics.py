"""Diagnostics: what is wrong where → `file:line:col: what is wrong — what to do`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Location:
    file: str
    line: int = 1
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True, order=True)
class Diagnostic:
    location: Location
    message: str
    hint: str = ""
    check: str = ""  # which static check found it: syntax, binding, types, dataflow, capabilities, effects, design, ...

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" + (f" — {self.hint}" if self.hint else "")
