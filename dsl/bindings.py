"""Bindings: names a step produces (`as "gpu"`) → values later steps read (`$gpu`), scoped and immutable."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import core_schema

NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*"
_REF_RE = re.compile(rf"^\$?({NAME_PATTERN})$")


@dataclass(frozen=True)
class Ref:
    """A read of a bound name. In YAML `$gpu` (or a bare name where only a binding fits); in Gherkin `"gpu"`."""

    name: str

    @classmethod
    def parse(cls, value: Any) -> Ref:
        if isinstance(value, Ref):
            return value
        if isinstance(value, str) and (m := _REF_RE.match(value)):
            return cls(m.group(1))
        raise ValueError(f"{value!r} is not a binding name — write $name, e.g. $gpu")

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(cls.parse, serialization=core_schema.plain_serializer_function_ser_schema(str))

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        return {"type": "string", "pattern": rf"^\$?{NAME_PATTERN}$"}

    def __str__(self) -> str:
        return f"${self.name}"


@dataclass(frozen=True)
class Reads:
    """On a Ref field (`Annotated[Ref, Reads("gpu")]`): the kind of value it reads, as the binding
    step names it in `produces=`. Reading a name bound by a step that produces another kind is a
    compile-time type error (a text where a GPU index belongs), not a wrong value at run time."""

    kind: str


#: `produces=` of a step whose result is a copy of the binding it reads (its kind is that one's).
SAME_KIND_AS_SOURCE = "copy of a bound value"


def is_ref_text(value: Any) -> bool:
    """True for a YAML string that reads a binding (`$name`)."""
    return isinstance(value, str) and value.startswith("$") and bool(_REF_RE.match(value))


class BindingError(LookupError):
    """A name was read before it was bound, or bound twice in the same scope."""


class Bindings(Mapping[str, Any]):
    """Immutable-once-bound names; a child scope sees its parent's names but cannot rebind them."""

    def __init__(self, parent: Bindings | None = None) -> None:
        self._parent = parent
        self._own: dict[str, Any] = {}

    def child(self) -> Bindings:
        return Bindings(self)

    def bind(self, name: str, value: Any) -> None:
        if name in self:
            raise BindingError(f'"{name}" is already bound — choose another name for this `as`')
        self._own[name] = value

    def __getitem__(self, name: str) -> Any:
        if name in self._own:
            return self._own[name]
        if self._parent is not None:
            return self._parent[name]
        raise BindingError(f'"{name}" is not bound — bind it earlier with `as "{name}"`')

    def __contains__(self, name: object) -> bool:
        return name in self._own or (self._parent is not None and name in self._parent)

    def __iter__(self) -> Iterator[str]:
        seen = dict.fromkeys(self._own)
        if self._parent is not None:
            seen.update(dict.fromkeys(self._parent))
        return iter(seen)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def resolve(self, value: Any) -> Any:
        """Replace every Ref inside `value` (lists, dicts, tuples) by its bound value."""
        if isinstance(value, Ref):
            return self[value.name]
        if isinstance(value, list | tuple):
            return type(value)(self.resolve(v) for v in value)
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        return value
