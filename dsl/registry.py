"""Step declarations → one registry that both syntaxes, the compiler and pytest-bdd read.

A step is declared once with `@given/@when/@then(...)` (or `@step(..., keyword=...)`): stable id,
keyword, canonical phrase, YAML key, parameter model, produced binding, needs, effects and
compensation. Step libraries are found through the `stepgraph.steps` entry-point group.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .entry_points import in_group
from .phrases import BIND_FIELD, Phrase, PhraseError, Window, split_window, squeeze
from .units import Duration

Keyword = Literal["given", "when", "then"]
KEYWORDS: tuple[Keyword, ...] = ("given", "when", "then")

#: An effect `increments-<resource>` (e.g. increments-agent-counters) makes later absolute checks
#: on that resource (`absolute={"agent-counters"}`) depend on scenario order (static check 7).
INCREMENTS = "increments-"

#: Effects that change the system under test and so need a compensation (static check 6).
MUTATING_EFFECTS = frozenset({"creates-objects", "deletes-objects", "modifies-objects", "writes-gpu-caps"})

_ID_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
_KEY_RE = re.compile(r"^[a-z][a-z0-9_]*$")
RESERVED_KEYS = frozenset({"expect", "within", "all", BIND_FIELD})


def _no_pydantic_plugins_to_look_for() -> None:
    """pydantic looks for its plugins (entry point group `pydantic`) when the first model is made,
    by reading every installed distribution's metadata (some 11 ms); the kept entry points of this
    search path (dsl/entry_points.py) answer the same question. When the group is empty, pydantic
    is told so the way its own look-up does (an empty set of plugins loaded); when it is not, or
    plugins are turned off, pydantic looks for them itself as ever."""
    from pydantic.plugin import _loader

    looks = getattr(_loader, "_plugins", ()) is None and not os.environ.get("PYDANTIC_DISABLE_PLUGINS")
    if looks and not in_group(_loader.PYDANTIC_ENTRY_POINT_GROUP):
        _loader._plugins = {}


_no_pydantic_plugins_to_look_for()  # before the first model below


class Params(BaseModel):
    """Base of every step parameter model: unknown fields are errors, values are immutable.

    Each model builds its validator the first time it validates (`defer_build`), not as its
    library is imported: a run or a lint validates the parameters of the steps its scenarios use,
    and a library declares many more (building one costs about 0.3 ms, some 7 ms of collecting
    the catalog). Its fields are known from the start all the same."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, defer_build=True)


class NoParams(Params):
    """For steps that take no parameters."""


class StepDeclarationError(ValueError):
    """A step declaration that cannot work; raised when the library is imported."""


@dataclass(frozen=True)
class StepDecl:
    """Everything known about one library step."""

    id: str
    keyword: Keyword
    phrase: Phrase
    key: str
    params: type[Params]
    func: Callable[..., Any]
    produces: str | None = None
    needs: frozenset[str] = frozenset()
    effects: frozenset[str] = frozenset()
    compensation: Callable[..., Any] | None = None
    doc: str = ""
    min_within: Duration | None = None  # the shortest `within` that can work (static check 8)
    absolute: frozenset[str] = frozenset()  # shared state whose absolute value this check asserts (check 7)

    @property
    def is_check(self) -> bool:
        """Then-steps are predicates: side-effect free, so they may be retried under `within`."""
        return self.keyword == "then"

    @property
    def mutating_effects(self) -> frozenset[str]:
        return self.effects & MUTATING_EFFECTS


@dataclass(frozen=True)
class Match:
    decl: StepDecl
    raw: dict[str, Any]  # field → raw value (before model validation), plus "as" if produced
    window: Window | None = None  # the `within`/`throughout` prefix the text had

    def __init__(self, decl: StepDecl, raw: dict[str, Any], window: Window | None = None) -> None:
        # Set straight into the instance's dict: half the time of the generated frozen __init__'s
        # object.__setattr__ per field, and one is made for every text matched. Still frozen.
        fields = self.__dict__
        fields["decl"], fields["raw"], fields["window"] = decl, raw, window


@dataclass(frozen=True)
class LaterStep:
    """A declaration of a step library not imported yet, as the kept index of its entry-point group
    recorded it (dsl/step_index.py): what matching a text and the static checks read of every
    declaration, without the model and the function. `Registry.match` never returns one: a text
    its phrase reads imports the library, whose own declaration takes its place."""

    id: str
    keyword: Keyword
    phrase: Phrase
    key: str
    produces: str | None
    needs: frozenset[str]
    effects: frozenset[str]
    absolute: frozenset[str]
    min_within: Duration | None
    module: str  # where the step's function is defined
    library: str  # the entry point whose import declares it

    @property
    def is_check(self) -> bool:
        return self.keyword == "then"


@dataclass(frozen=True)
class RegistryState:
    """What `Registry.snapshot` saw: the declarations in the order they were added, and the
    entry-point groups already loaded."""

    steps: tuple[StepDecl, ...]
    loaded_groups: frozenset[str]


class _Importing(Mapping[str, StepDecl]):
    """A read-only view of the declarations by id or YAML key, the libraries not imported yet
    included: looking one of theirs up imports its library first."""

    def __init__(self, real: dict[str, StepDecl], later: dict[str, LaterStep], registry: Registry) -> None:
        self._real, self._later, self._registry = real, later, registry

    def __getitem__(self, name: str) -> StepDecl:
        if name not in self._real and name in self._later:
            self._registry._import_later(self._later[name].library)
        return self._real[name]

    def __contains__(self, name: object) -> bool:
        return name in self._real or name in self._later

    def __iter__(self) -> Iterator[str]:
        yield from self._real
        yield from (name for name in self._later if name not in self._real)

    def __len__(self) -> int:
        return len(self._real) + sum(1 for name in self._later if name not in self._real)


class Registry:
    """All declared steps, by id, YAML key and phrase.

    Declarations change only through `add`, `remove` and `restore`, which keep the phrase index
    `match` reads in step with them (`steps` and `by_key` are read-only views).

    A group of step libraries whose declarations were kept (dsl/step_index.py) is not imported
    when it is loaded: each library is imported when a text one of its phrases reads is matched,
    one of its steps is looked up by id or key, or every declaration is asked for (iterating the
    registry). `declared()` gives what matching and the static checks read of every declaration,
    importing nothing."""

    def __init__(self) -> None:
        self._steps: dict[str, StepDecl] = {}
        self._by_key: dict[str, StepDecl] = {}
        self._later: dict[str, LaterStep] = {}  # id → a declaration of a library not imported yet
        self._later_by_key: dict[str, LaterStep] = {}
        # entry point value → the entry point to import it by, and the file its declarations were kept in
        self._later_libraries: dict[str, tuple[Any, Path]] = {}
        self.steps: Mapping[str, StepDecl] = _Importing(self._steps, self._later, self)
        self.by_key: Mapping[str, StepDecl] = _Importing(self._by_key, self._later_by_key, self)
        self.loaded_groups: set[str] = set()
        # Leading words of a phrase → (order added, phrase prefix, declaration) of the phrases
        # that begin with them: a text is tried only against the phrases its first words can
        # begin, not against every declaration (see `_index_key`).
        self._index: dict[str, list[tuple[int, str, Any]]] = {}
        # The entries `_candidates` gathered for a text's first two words, while the index is as
        # it was then: every change to the index goes through `_index_put`/`_index_drop`/`restore`,
        # which forget them.
        self._gathered: dict[tuple[str, str | None], list[tuple[int, str, Any]]] = {}
        self._order: dict[str, int] = {}  # id → its place in the order added
        self._added = 0

    def add(self, decl: StepDecl) -> StepDecl:
        later = self._later.get(decl.id)
        if later is not None and later.module == getattr(decl.func, "__module__", None) and later.phrase.text == decl.phrase.text:
            self._replace(later, decl)  # its library is being imported: the declaration itself
            return decl
        for waiting in [s for s in self._later.values() if decl.id == s.id or decl.key == s.key or decl.phrase.text == s.phrase.text]:
            self._import_later(waiting.library)  # so that the checks below see what it clashes with
        if decl.id in self._steps:
            raise StepDeclarationError(f"step id {decl.id!r} is declared twice — ids must be unique")
        if decl.key in self._by_key:
            raise StepDeclarationError(
                f"step {decl.id!r}: YAML key {decl.key!r} is already used by {self._by_key[decl.key].id!r} — pass key=..."
            )
        for other in self._steps.values():
            if other.phrase.text == decl.phrase.text:
                raise StepDeclarationError(f"step {decl.id!r}: same phrase as {other.id!r} — phrases must differ")
        self._insert(decl)
        return decl

    def remove(self, step_id: str) -> StepDecl:
        """Take the declaration `step_id` out again (a test's own steps, once the test is over)."""
        if step_id in self._later:
            self._import_later(self._later[step_id].library)
        decl = self._steps.pop(step_id)
        del self._order[step_id]
        del self._by_key[decl.key]
        self._index_drop(decl.phrase, decl)
        return decl

    def snapshot(self) -> RegistryState:
        self._import_all_later()
        return RegistryState(tuple(sorted(self._steps.values(), key=lambda d: self._order[d.id])), frozenset(self.loaded_groups))

    def restore(self, state: RegistryState) -> None:
        """Make the registry what it was at `state`: the same declarations, in the same order."""
        self._steps.clear()
        self._by_key.clear()
        self._index.clear()
        self._gathered.clear()
        self._order.clear()
        self._later.clear()
        self._later_by_key.clear()
        self._later_libraries.clear()
        for decl in state.steps:
            self._insert(decl)
        self.loaded_groups.clear()
        self.loaded_groups.update(state.loaded_groups)

    def _insert(self, decl: StepDecl, added: int | None = None) -> None:
        if added is None:
            added, self._added = self._added, self._added + 1
        self._steps[decl.id] = decl
        self._by_key[decl.key] = decl
        self._order[decl.id] = added
        self._index_put(decl.phrase, (added, decl.phrase.prefix, decl))

    def _insert_later(self, step: LaterStep) -> None:
        self._later[step.id] = step
        self._later_by_key[step.key] = step
        self._index_put(step.phrase, (self._added, step.phrase.prefix, step))
        self._added += 1

    def _index_put(self, phrase: Phrase, entry: tuple[int, str, Any]) -> None:
        self._index.setdefault(_index_key(phrase), []).append(entry)
        self._gathered.clear()

    def _index_drop(self, phrase: Phrase, decl: Any) -> list[tuple[int, str, Any]]:
        """Take `decl`'s entry out of the index; the entries taken."""
        bucket = self._index[_index_key(phrase)]
        dropped = [entry for entry in bucket if entry[2] is decl]
        bucket[:] = [entry for entry in bucket if entry[2] is not decl]
        self._gathered.clear()
        return dropped

    def _replace(self, later: LaterStep, decl: StepDecl) -> None:
        """`decl`, declared by the import of its library, takes the place of the kept `later`."""
        del self._later[later.id]
        del self._later_by_key[later.key]
        [(added, _, _)] = self._index_drop(later.phrase, later)
        self._insert(decl, added)
        if summary_of(decl) != summary_of(later):
            self._forget_kept(later.library)

    def _import_later(self, library: str) -> None:
        """Import the step library `library` (an entry point value) whose declarations wait."""
        ep, _ = self._later_libraries.get(library, (None, None))
        if ep is None:
            return
        _load_library(ep)
        left = [step for step in self._later.values() if step.library == library]
        for step in left:  # the library no longer declares what was kept of it
            self._forget_kept(library)
            del self._later[step.id]
            del self._later_by_key[step.key]
            self._index_drop(step.phrase, step)
        del self._later_libraries[library]

    def _forget_kept(self, library: str) -> None:
        """What was kept of `library` is not what it declares (something outside its module files
        changed it): the next process imports its group whole again."""
        kept = self._later_libraries.get(library, (None, None))[1]
        if kept is not None:
            kept.unlink(missing_ok=True)

    def import_waiting(self) -> None:
        """Import every library whose kept declarations wait: for a process about to fork runs
        that will need them, so that each does not import them on its own."""
        self._import_all_later()

    def _import_all_later(self) -> None:
        for library in list(self._later_libraries):
            self._import_later(library)

    def __iter__(self) -> Iterator[StepDecl]:
        """Every declaration, whole: the libraries not imported yet are imported."""
        self._import_all_later()
        return iter(sorted(self._steps.values(), key=lambda d: d.id))

    def declared(self) -> Iterator[StepDecl | LaterStep]:
        """Every declaration by id, a library not imported yet by what was kept of it: ids,
        keywords, phrases, needs, what they produce, effects."""
        both: dict[str, StepDecl | LaterStep] = {**self._later, **self._steps}
        return iter(sorted(both.values(), key=lambda d: d.id))

    def __len__(self) -> int:
        return len(self.steps)

    def match(self, text: str) -> list[Match]:
        """Every declaration whose phrase reads `text` (with or without a `within`/`throughout <duration>` prefix),
        in the order they were added."""
        found = self._match(text)
        for m in found:  # (a loop: most texts match one declaration, already imported)
            if isinstance(m.decl, LaterStep):
                break
        else:
            return found
        for library in sorted({m.decl.library for m in found if isinstance(m.decl, LaterStep)}):
            self._import_later(library)  # their own declarations take the place of the kept ones
        return self._match(text)

    def _match(self, text: str) -> list[Match]:
        window, rest = split_window(text)  # with a window, `rest` comes squeezed
        squeezed = squeeze(text)
        entries = self._candidates(squeezed)
        if window is None:  # the common case, without a call per candidate
            found = [
                (added, Match(decl, decl.phrase.values(hit)))
                for added, prefix, decl in entries
                if (not prefix or squeezed.startswith(prefix)) and (hit := decl.phrase.regex.fullmatch(squeezed)) is not None
            ]
        else:  # a check may read the text after its window
            entries = list({entry[0]: entry for entry in (*entries, *self._candidates(rest))}.values())
            found = [(added, m) for added, _, decl in entries if (m := _match_squeezed(decl, squeezed, window, rest)) is not None]
        if len(found) > 1:
            found.sort(key=lambda pair: pair[0])
        return [m for _, m in found]

    def _candidates(self, squeezed: str) -> list[tuple[int, str, Any]]:
        """The index entries of every phrase that can read the squeezed `squeezed` (not to be
        changed), each with the prefix that is still to be checked: "" when every text that
        begins with the same two words begins with the phrase's prefix."""
        words = squeezed.split(" ", 2)
        key = (words[0], words[1] if len(words) > 1 else None)
        entries = self._gathered.get(key)
        if entries is None:  # (texts that begin with the same two words have the same candidates)
            if len(self._gathered) >= 4096:  # texts that begin with values: do not keep them all
                self._gathered.clear()
            indexed = list(self._index.get("", ()))
            if words[0]:
                indexed += self._index.get(words[0], ())
            if len(words) > 1:
                indexed += self._index.get(f"{words[0]} {words[1]}", ())
            # Each such text is `known`, or `known` and a space and more.
            known = " ".join(words[:2])
            entries = []
            for added, prefix, decl in indexed:
                if known.startswith(prefix):
                    entries.append((added, "", decl))  # every such text begins with it
                elif len(words) > 1 and prefix.startswith(known + " "):
                    entries.append((added, prefix, decl))  # some do
                # (else none does: a text begins with `known`, and then a space or nothing)
            self._gathered[key] = entries
        return entries

    def step(self, id: str, keyword: Keyword, phrase: str, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator registering `func(ctx, params)` as a step in this registry."""

        def register(func: Callable[..., Any]) -> Callable[..., Any]:
            self.add(declare(func, id=id, keyword=keyword, phrase=phrase, **options))
            return func

        return register

    def given(self, id: str, phrase: str, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return self.step(id, "given", phrase, **options)

    def when(self, id: str, phrase: str, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return self.step(id, "when", phrase, **options)

    def then(self, id: str, phrase: str, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return self.step(id, "then", phrase, **options)

    def load_entry_points(self, group: str = "stepgraph.steps") -> None:
        """Load every step library registered under `group` (once per registry): import each, or,
        when what they declare was kept (dsl/step_index.py), take the kept declarations and
        import each library when one of its steps is needed."""
        if group in self.loaded_groups:
            return
        self.loaded_groups.add(group)
        from . import step_index  # here: it reads the registry's declarations

        eps = in_group(group)
        kept = step_index.kept_declarations(group, eps)
        if kept is not None and self._wait_for(*kept):
            return
        recorder = step_index.Recorder(self, group, eps)
        for ep in eps:
            with recorder.library(ep):
                _load_library(ep)
        recorder.keep()

    def _wait_for(self, path: Path, kept: list[tuple[Any, list[LaterStep]]]) -> bool:
        """Take the kept declarations of a group's libraries, each to be imported when needed;
        False (and nothing taken) when one of them clashes with a declaration made already, so
        that importing every library reports the clash as ever."""
        steps = [step for _, library in kept for step in library]
        phrases = {d.phrase.text for d in self._steps.values()}
        if any(s.id in self._steps or s.key in self._by_key or s.phrase.text in phrases for s in steps):
            return False
        for ep, library in kept:
            self._later_libraries[ep.value] = (ep, path)
            for step in library:
                self._insert_later(step)
        return True


def _load_library(ep: Any) -> None:
    """Import one step library, its problems said as declaration errors."""
    try:
        ep.load()
    except StepDeclarationError as exc:
        raise StepDeclarationError(f"step library {ep.value!r}: {exc}") from exc
    except Exception as exc:
        raise StepDeclarationError(
            f"step library {ep.value!r} (entry point {ep.group}:{ep.name}) failed to import: {type(exc).__name__}: {exc}"
        ) from exc


def summary_of(decl: StepDecl | LaterStep) -> tuple[Any, ...]:
    """What the kept index holds of a declaration (LaterStep's fields but the library)."""
    module = decl.module if isinstance(decl, LaterStep) else getattr(decl.func, "__module__", None)
    return (decl.id, decl.keyword, decl.phrase.text, decl.key, decl.produces, decl.needs, decl.effects, decl.absolute,
            decl.min_within, module)


def _index_key(phrase: Phrase) -> str:
    """The phrase's first words (at most two) that every text it reads begins with, each followed
    by a space or the text's end once the text is squeezed; "" when it begins with none.

    A word followed by a placeholder may run into the placeholder's text (`go {x}` reads
    `go"x"`), so the words counted are those before the last word of its first literal, unless the
    phrase has no placeholders; a word holding a quote is never counted (inside quotes, spaces are
    kept). So a text read by a phrase keyed `w1 w2` starts `w1 w2` followed by a space or nothing,
    and one read by a phrase keyed `w1` starts `w1` so."""
    return " ".join(phrase.leading_words[:2])


def match_decl(decl: StepDecl, text: str, window: Window | None = None, rest: str = "") -> Match | None:
    """`text` read by one declaration; pass `split_window(text)` as (window, rest) when known."""
    if window is None and not rest:
        window, rest = split_window(text)
    return _match_squeezed(decl, squeeze(text), window, rest)


def _match_squeezed(decl: StepDecl, squeezed: str, window: Window | None, rest: str) -> Match | None:
    """`match_decl` of a squeezed text, with its window and (squeezed) rest split off already."""
    raw = decl.phrase.match_squeezed(squeezed)
    if raw is not None:
        return Match(decl, raw)
    if window is not None and decl.is_check and (raw := decl.phrase.match_squeezed(rest)) is not None:
        return Match(decl, raw, window)
    return None


def declare(
    func: Callable[..., Any],
    *,
    id: str,
    keyword: Keyword,
    phrase: str,
    key: str | None = None,
    params: type[Params] | None = None,
    produces: str | None = None,
    needs: Iterable[str] = (),
    effects: Iterable[str] = (),
    compensation: Callable[..., Any] | None = None,
    doc: str | None = None,
    min_within: str | Duration | None = None,
    absolute: Iterable[str] = (),
) -> StepDecl:
    """Build and validate one declaration (see `Registry.step`)."""
    where = f"step {id!r}"
    if not _ID_RE.match(id):
        raise StepDeclarationError(f"{where}: ids are dotted lower-case names like 'k8s.apply'")
    if keyword not in KEYWORDS:
        raise StepDeclarationError(f"{where}: keyword must be one of {KEYWORDS}, not {keyword!r}")
    key = key or id.rsplit(".", 1)[-1]
    if not _KEY_RE.match(key) or key in RESERVED_KEYS:
        raise StepDeclarationError(f"{where}: YAML key {key!r} must be a lower_snake name and not one of {sorted(RESERVED_KEYS)}")
    try:
        compiled = Phrase(phrase)
    except PhraseError as exc:
        raise StepDeclarationError(f"{where}: {exc}") from None
    model = params or _params_from_annotation(func, where) or NoParams
    fields = set(model.model_fields)
    slots = set(compiled.fields)
    if (BIND_FIELD in slots) != (produces is not None):
        raise StepDeclarationError(f"{where}: a step that produces a value names it with {{as}} in its phrase, and only such a step does")
    if unknown := slots - fields - {BIND_FIELD}:
        raise StepDeclarationError(f"{where}: phrase names {sorted(unknown)}, which {model.__name__} does not have")
    if missing := set(model.model_fields) - slots:
        # Every field is in the phrase, so every YAML step can be written in Gherkin (and run by pytest-bdd).
        raise StepDeclarationError(f"{where}: fields {sorted(missing)} do not appear in the phrase — every parameter must")
    effects = frozenset(effects)
    if keyword == "then" and effects:
        raise StepDeclarationError(f"{where}: then-steps are checks and may be retried, so they cannot have effects")
    return StepDecl(
        id=id,
        keyword=keyword,
        phrase=compiled,
        key=key,
        params=model,
        func=func,
        produces=produces,
        needs=frozenset(needs),
        effects=effects,
        compensation=compensation,
        doc=(doc if doc is not None else (func.__doc__ or "")).strip(),
        min_within=_min_within(min_within, keyword, where),
        absolute=_absolute(absolute, keyword, where),
    )


def _absolute(value: Iterable[str], keyword: str, where: str) -> frozenset[str]:
    resources = frozenset(value)
    if resources and keyword != "then":
        raise StepDeclarationError(f"{where}: absolute= names what a check asserts, so it applies to then-steps only")
    return resources


def _min_within(value: str | Duration | None, keyword: str, where: str) -> Duration | None:
    if value is None:
        return None
    if keyword != "then":
        raise StepDeclarationError(f"{where}: min_within applies to checks (then-steps) only")
    try:
        return Duration.parse(value)
    except ValueError as exc:
        raise StepDeclarationError(f"{where}: min_within: {exc}") from None


def _params_from_annotation(func: Callable[..., Any], where: str) -> type[Params] | None:
    """The model annotated on the function's second parameter (`def f(ctx, p: MyParams)`)."""
    import inspect
    import typing

    names = list(inspect.signature(func).parameters)
    if len(names) < 2:
        return None
    try:
        hint = typing.get_type_hints(func).get(names[1])
    except Exception:  # e.g. a model defined inside a function, under postponed annotations
        raise StepDeclarationError(f"{where}: cannot resolve the annotation of {names[1]!r} — pass params=YourModel") from None
    if isinstance(hint, type) and issubclass(hint, Params):
        return hint
    return None


#: The registry the module-level decorators write to and the plugin and CLI read.
REGISTRY = Registry()
step = REGISTRY.step
given = REGISTRY.given
when = REGISTRY.when
then = REGISTRY.then
