"""Canonical phrases with typed placeholders → regular expressions that parse and render step text.

A phrase such as `the counter {metric} grew by at least {n:int} since {since:ref}` names model
fields in braces, with an optional placeholder type after the colon (default `str`). Each type
knows the text it matches in Gherkin, how that text becomes a value for the parameter model, and
how a value is written back, so Gherkin → IR → Gherkin is lossless.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .bindings import NAME_PATTERN, Ref
from .units import DURATION_TEXT, POWER_TEXT, Duration, Power, whole_watts

_QUOTED = r'"(?:[^"\\]|\\.)*"'


_QUOTED_OR_SPACE = re.compile(rf"({_QUOTED})|\s+")


@functools.lru_cache(maxsize=4096)  # binding squeezes one text once per declaration it tries
def squeeze(text: str) -> str:
    """`text` with each run of whitespace outside quoted values made one space, and stripped.

    Step text is compared word by word, but a quoted value is the user's own text: `"a  b"` keeps
    both spaces, so a value survives Gherkin → IR → Gherkin (and YAML) unchanged."""
    if _SQUEEZABLE.search(text) is None:  # every run of whitespace is one space already
        return text.strip()
    return _QUOTED_OR_SPACE.sub(lambda m: m.group(1) or " ", text).strip()


#: Whitespace that `squeeze` would change, wherever it is: a character other than a space, or two.
_SQUEEZABLE = re.compile(r"[^\S ]|  ")
_ESCAPE = re.compile(r"\\(.)")


def _unquote(text: str) -> str:
    return _ESCAPE.sub(r"\1", text[1:-1]) if "\\" in text else text[1:-1]


def _quote(value: Any) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _number(text: str) -> int | float:
    return int(text) if re.fullmatch(r"-?\d+", text) else float(text)


@dataclass(frozen=True)
class PlaceholderType:
    """How one kind of placeholder looks in Gherkin text, and how it converts."""

    name: str
    pattern: str  # a regex without capturing groups
    parse: Callable[[str], Any]
    render: Callable[[Any], str]


PLACEHOLDER_TYPES: dict[str, PlaceholderType] = {}


def register_placeholder_type(name: str, pattern: str, parse: Callable[[str], Any], render: Callable[[Any], str]) -> None:
    """Make `{field:name}` usable in phrases. `pattern` must not contain capturing groups."""
    if re.compile(pattern).groups:
        raise ValueError(f"placeholder type {name!r}: use (?:...) instead of capturing groups")
    PLACEHOLDER_TYPES[name] = PlaceholderType(name, pattern, parse, render)


register_placeholder_type("str", _QUOTED, _unquote, _quote)
register_placeholder_type("int", r"-?\d+", int, str)
register_placeholder_type("number", r"-?\d+(?:\.\d+)?", _number, str)
register_placeholder_type("word", r"[A-Za-z_][A-Za-z0-9_.:/-]*", str, str)
register_placeholder_type("power", POWER_TEXT, str, lambda v: str(Power.parse(v)))
register_placeholder_type("watts", POWER_TEXT, str, lambda v: f"{whole_watts(v)} W")
register_placeholder_type("duration", DURATION_TEXT, str, lambda v: str(Duration.parse(v)))
register_placeholder_type("ref", rf'"{NAME_PATTERN}"|\${NAME_PATTERN}', lambda t: Ref(t.strip('"$')), lambda v: _quote(Ref.parse(v).name))
register_placeholder_type(
    "list", _QUOTED, lambda t: [x.strip() for x in _unquote(t).split(",") if x.strip()], lambda v: _quote(", ".join(map(str, v)))
)
#: `{as}` — the name a step binds its result to; always written `"name"` in Gherkin.
register_placeholder_type("bind", rf'"{NAME_PATTERN}"', lambda t: t.strip('"'), _quote)

#: Placeholders that are not part of the step's text but of what is attached below it: a Gherkin
#: data table (`{rows:table}`, a list of one mapping per row, keyed by the header row) or a doc
#: string (`{body:docstring}`, text). At most one, written last; YAML gives the same as a list of
#: mappings or a string.
ATTACHMENT_TYPES = ("table", "docstring")
register_placeholder_type("table", r"(?!x)x", list, str)
register_placeholder_type("docstring", r"(?!x)x", str, str)

#: Placeholders whose text is a number and a unit, and what parses it (the unit's own messages).
UNIT_TYPES = {"power": Power.parse, "watts": whole_watts, "duration": Duration.parse}
#: A number and one or two words: where a unit was meant, whatever unit was written.
_LOOSE_UNIT = r"\d+(?:\.\d+)?\s*[^\W\d]+(?:\s+[^\W\d]+)?"
LOOSE_WINDOW_RE = re.compile(rf"^(within|throughout)\s+({_LOOSE_UNIT})\s*,?\s+(.*)$", re.DOTALL)

_PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::([A-Za-z_][A-Za-z0-9_]*))?\}")
BIND_FIELD = "as"


class PhraseError(ValueError):
    """A phrase that cannot work: unknown placeholder type, a field named twice, bad braces."""


@dataclass(frozen=True)
class Slot:
    field: str
    type: PlaceholderType


class Phrase:
    """One compiled canonical phrase."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.slots: list[Slot] = []
        self._literals: list[str] = []
        self.attachment: Slot | None = None  # the data table or doc string below the step, if it takes one
        self._loose: re.Pattern[str] | None = None
        body = self._split_attachment(text)
        regex, pos = [], 0
        for m in _PLACEHOLDER_RE.finditer(body):
            literal = body[pos : m.start()]
            self._literals.append(literal)
            regex.append(_literal_regex(literal))
            field, type_name = m.group(1), m.group(2) or ("bind" if m.group(1) == BIND_FIELD else "str")
            if type_name not in PLACEHOLDER_TYPES:
                raise PhraseError(f"phrase {text!r}: unknown placeholder type {type_name!r} — known: {sorted(PLACEHOLDER_TYPES)}")
            if type_name in ATTACHMENT_TYPES:
                raise PhraseError(f"phrase {text!r}: a {{{field}:{type_name}}} placeholder comes last, and only one — move it to the end")
            if any(s.field == field for s in self.slots) or (self.attachment and self.attachment.field == field):
                raise PhraseError(f"phrase {text!r}: field {field!r} appears twice — name each field once")
            self.slots.append(Slot(field, PLACEHOLDER_TYPES[type_name]))
            regex.append(f"({PLACEHOLDER_TYPES[type_name].pattern})")
            pos = m.end()
        tail = body[pos:]
        self._literals.append(tail)
        regex.append(_literal_regex(tail))
        if "{" in "".join(self._literals) or "}" in "".join(self._literals):
            raise PhraseError(f"phrase {text!r}: stray brace — placeholders look like {{field}} or {{field:type}}")
        self._pattern = "".join(regex)
        # What every text this phrase reads begins with once squeezed: its first words, up to one
        # holding a quote (inside quotes spaces are kept). Most phrases differ there, so matching a
        # text against every declaration compiles only the few regexes whose beginning it has.
        words = list(itertools.takewhile(lambda word: '"' not in word, self._literals[0].split()))
        self.prefix = " ".join(words)
        # Of those, the words every such text has followed by a space or its end: the last word of
        # the first literal may run into the placeholder after it (`go {x}` reads `go"x"`).
        self.leading_words = tuple(words if not self.slots or len(words) < len(self._literals[0].split()) else words[:-1])
        self.fields = [s.field for s in self.slots] + ([self.attachment.field] if self.attachment else [])
        self._converters = tuple((s.field, s.type.parse) for s in self.slots)  # what `values` applies, group by group

    def _split_attachment(self, text: str) -> str:
        """The phrase without a trailing `{rows:table}` / `{body:docstring}`, which sets `attachment`."""
        found = list(_PLACEHOLDER_RE.finditer(text))
        if found and found[-1].group(2) in ATTACHMENT_TYPES and not text[found[-1].end() :].strip():
            last = found[-1]
            self.attachment = Slot(last.group(1), PLACEHOLDER_TYPES[last.group(2)])
            return text[: last.start()].rstrip()
        return text

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self._pattern)

    def match(self, text: str) -> dict[str, Any] | None:
        """Parse `text` into raw field values, or None when it is not this phrase."""
        return self.match_squeezed(squeeze(text))

    def match_squeezed(self, text: str) -> dict[str, Any] | None:
        """`match` of a text already `squeeze`d: a registry squeezes a step's text once for all of
        its phrases instead of once for each."""
        if not text.startswith(self.prefix):
            return None
        m = self.regex.fullmatch(text)
        return self.values(m) if m is not None else None

    def values(self, m: re.Match[str]) -> dict[str, Any]:
        """The raw field values of a full match of `regex`."""
        return {field: parse(value) for (field, parse), value in zip(self._converters, m.groups(), strict=True)}

    def loose_match(self, text: str) -> dict[str, str] | None:
        """`text` read with every unit placeholder (power, watts, duration) taking a number and any
        unit words: the raw texts of those placeholders, or None. For saying which unit was meant
        (`310 w` → `W`) where the exact phrase does not match."""
        units = [i for i, slot in enumerate(self.slots) if slot.type.name in UNIT_TYPES]
        if not units:
            return None
        if self._loose is None:
            parts = [_literal_regex(self._literals[0])]
            for i, (slot, literal) in enumerate(zip(self.slots, self._literals[1:], strict=True)):
                parts += [f"({_LOOSE_UNIT if i in units else slot.type.pattern})", _literal_regex(literal)]
            self._loose = re.compile("".join(parts))
        m = self._loose.fullmatch(squeeze(text))
        return {self.slots[i].field: m.group(i + 1) for i in units} if m is not None else None

    def render(self, values: dict[str, Any]) -> str:
        out = [self._literals[0]]
        for slot, literal in zip(self.slots, self._literals[1:], strict=True):
            out += [slot.type.render(values[slot.field]), literal]
        return squeeze("".join(out))

    def __repr__(self) -> str:
        return f"Phrase({self.text!r})"


def _literal_regex(literal: str) -> str:
    """The regex of a phrase's words between placeholders, for a `squeeze`d text. There, words
    are one space apart and a placeholder's value one space or none from a word; single spaces
    compile and match faster than `\\s+`. Inside quotes `squeeze` keeps every space, so a quoted
    part of the phrase reads any run of whitespace between its words, as before squeezing."""
    pieces, quoted = [], False
    for i, word in enumerate(literal.split()):
        if i:
            pieces.append(r"\s+" if quoted else " ")
        pieces.append(re.escape(word))
        quoted ^= len(_UNESCAPED_QUOTE.findall(word)) % 2 == 1
    body = "".join(pieces)
    lead = " ?" if literal[:1].isspace() else ""
    trail = (r"\s*" if quoted else " ?") if literal[-1:].isspace() else ""
    return f"{lead}{body}{trail}" if body else (" ?" if literal else "")


_UNESCAPED_QUOTE = re.compile(r'(?<!\\)"')


#: The time windows a check may be prefixed with: `within <d>` (comes to hold before the window
#: closes) and `throughout <d>` (holds at every observation until the window closes).
WINDOW_MODES = ("within", "throughout")
WINDOW_RE = re.compile(rf"^(within|throughout)\s+({DURATION_TEXT})\s*,?\s+(.*)$", re.DOTALL)


#: The header of checks judged together in one window (their lines follow in a doc string):
#: `Then within 2 agent ticks all of these hold together:`.
JOINT_PHRASE = "all of these hold together:"
JOINT_RE = re.compile(rf"^(within|throughout)\s+({DURATION_TEXT})\s*,?\s+all\s+of\s+these\s+hold\s+together\s*:?$")


@dataclass(frozen=True)
class Window:
    """`within 2 agent ticks` or `throughout 30 s` in front of a check."""

    mode: str  # one of WINDOW_MODES
    duration: Duration

    def __str__(self) -> str:
        return f"{self.mode} {self.duration}"


def joint_window(text: str) -> Window | None:
    """The window of a joint-check header (`within 2 agent ticks all of these hold together:`), or None."""
    squeezed = squeeze(text)
    m = JOINT_RE.match(squeezed) if squeezed.startswith(WINDOW_MODES) else None  # (what it begins with: most texts do not)
    return Window(m.group(1), Duration.parse(m.group(2))) if m is not None else None


def split_window(text: str) -> tuple[Window | None, str]:
    """`within 2 agent ticks X` / `throughout 30 s X` → (Window, "X"); anything else → (None, text)."""
    squeezed = squeeze(text)
    m = WINDOW_RE.match(squeezed) if squeezed.startswith(WINDOW_MODES) else None  # (what it begins with: most texts do not)
    if m is None:
        return None, text
    return Window(m.group(1), Duration.parse(m.group(2))), m.group(3)
