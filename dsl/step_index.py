"""What the step libraries of an entry-point group declare, kept on disk so that a process that
needs few of them (a lint of one file, a run of a project's own steps) imports only those.

Importing every library builds their parameter models and declares every step, which costs more
than linting a small file does. Once a group was imported whole in a process that had declared
nothing of those libraries before, the declarations of each library — id, keyword, phrase, YAML
key, what a step produces, needs, effects, the absolute resources and shortest window of a check,
the module of its function — are kept (`keep_derived`: with the stamp of every module file that
process had loaded), named by the group, its entry points, the file each names and the
interpreter. A later load of the group takes them instead (`Registry.load_entry_points`): a text
that one of their phrases reads, a step looked up by id or key, or a walk over every declaration
imports the library, whose own declarations take the kept ones' places, in the same order.

Nothing is kept when a library registered a placeholder type (its phrases, and others', would
read differently without it), when a declaration was made before by a module of the libraries'
own packages (a library imported already: what it declares would be missing), or when importing
failed; a kept index whose module files changed, or that does not read back whole, is ignored and
every library imported as before, so a library's declaration errors come as ever.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cache_dir import cache_root, keep_derived, read_kept_derived
from .phrases import PLACEHOLDER_TYPES, Phrase, PhraseError
from .units import Duration

if TYPE_CHECKING:
    from .registry import LaterStep, Registry, StepDecl

_KEYWORDS = ("given", "when", "then")


def _kept_file(group: str, eps: Sequence[Any]) -> Path | None:
    """Where the declarations of `group` are kept, named by its entry points and the file each
    names (found without importing it); None when one names no module that can be found."""
    named = []
    for ep in eps:
        try:
            spec = importlib.util.find_spec(ep.module)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        named.append([ep.name, ep.value, spec.origin])
    key = json.dumps([group, named, sys.version]).encode()
    return cache_root() / "step-declarations" / f"{hashlib.sha256(key).hexdigest()}.json"


def kept_declarations(group: str, eps: Sequence[Any]) -> tuple[Path, list[tuple[Any, list[LaterStep]]]] | None:
    """Where the declarations of `group` are kept, and those of each library (in the order of
    `eps`); None when none are kept, or not all still hold."""
    path = _kept_file(group, eps)
    kept = read_kept_derived(path) if path is not None else None
    if path is None or not isinstance(kept, list) or len(kept) != len(eps):
        return None
    try:
        return path, [(ep, [_later(record, ep.value) for record in library]) for ep, library in zip(eps, kept, strict=True)]
    except (TypeError, ValueError, KeyError, PhraseError):  # not what `Recorder.keep` writes
        return None


def _later(record: Any, library: str) -> LaterStep:
    from .registry import LaterStep

    if not isinstance(record, dict) or record["keyword"] not in _KEYWORDS:
        raise ValueError(record)
    strings = [record[name] for name in ("id", "phrase", "key", "module")]
    sets = [record[name] for name in ("needs", "effects", "absolute")]
    if not all(isinstance(v, str) for v in strings) or not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in sets):
        raise ValueError(record)
    produces, min_within = record["produces"], record["min_within"]
    if produces is not None and not isinstance(produces, str):
        raise ValueError(record)
    window = None
    if min_within is not None:
        amount, unit = min_within
        if isinstance(amount, bool) or not isinstance(amount, int | float) or not isinstance(unit, str):
            raise ValueError(record)
        window = Duration(float(amount), unit)
    return LaterStep(id=record["id"], keyword=record["keyword"], phrase=Phrase(record["phrase"]), key=record["key"],
                     produces=produces, needs=frozenset(sets[0]), effects=frozenset(sets[1]), absolute=frozenset(sets[2]),
                     min_within=window, module=record["module"], library=library)


def _record(decl: StepDecl) -> dict[str, Any]:
    window = decl.min_within
    return {"id": decl.id, "keyword": decl.keyword, "phrase": decl.phrase.text, "key": decl.key, "produces": decl.produces,
            "needs": sorted(decl.needs), "effects": sorted(decl.effects), "absolute": sorted(decl.absolute),
            "min_within": None if window is None else [window.amount, window.unit], "module": decl.func.__module__}


class Recorder:
    """Watches a group's libraries being imported one by one, and keeps what each declared."""

    def __init__(self, registry: Registry, group: str, eps: Sequence[Any]) -> None:
        self.registry, self.group, self.eps = registry, group, list(eps)
        packages = {ep.module.partition(".")[0] for ep in self.eps}
        made_before = {getattr(d.func, "__module__", "") for d in registry._steps.values()}
        # a declaration made already by a module of the libraries' packages: a library, or what one
        # imports, ran before, and importing it now would not declare it again
        self.whole = not any(module.partition(".")[0] in packages for module in made_before)
        self.whole &= not any(ep.module in sys.modules for ep in self.eps)  # (imported by another, it is recorded there)
        self.types = dict(PLACEHOLDER_TYPES)
        self.libraries: list[list[dict[str, Any]]] = []

    @contextlib.contextmanager
    def library(self, ep: Any) -> Iterator[None]:
        before = set(self.registry._steps)
        yield
        self.libraries.append([_record(d) for d in self.registry._steps.values() if d.id not in before])

    def keep(self) -> None:
        same_types = self.types.keys() == PLACEHOLDER_TYPES.keys() and all(PLACEHOLDER_TYPES[n] is t for n, t in self.types.items())
        if not (self.whole and same_types and len(self.libraries) == len(self.eps)):
            return
        path = _kept_file(self.group, self.eps)
        if path is not None:
            keep_derived(path, self.libraries)
