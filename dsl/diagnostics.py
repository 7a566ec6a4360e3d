"""Diagnostics: what is wrong where → `file:line:col: what is wrong — what to do`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Location:
    file: str
    line: int = 1
    column: int = 1

    def __init__(self, file: str, line: int = 1, column: int = 1) -> None:
        # The generated frozen __init__ sets each field through object.__setattr__; set straight
        # into the instance's dict, they take half the time (compiling makes one for every step
        # and tag it reads). Still frozen: assigning to a field raises as before.
        fields = self.__dict__
        fields["file"], fields["line"], fields["column"] = file, line, column

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
