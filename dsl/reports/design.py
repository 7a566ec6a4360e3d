"""Design document (Markdown) → requirements with stable ids, titles and content hashes.

Requirement ids live in three places, and we read all three from markdown-it's token stream (so a
`# comment` inside a code block is never mistaken for a heading):

* headings that start with an id: `### A1 — Selector pins both halves`, `#### §8.5.1 Annotations land`;
* the first column of tables whose first header cell is `ID`: `| A3 | … |`;
* numbered list items directly under a numbered section heading: item 6 under `### 8.5 …` is `8.5.6`.

Plain numbered headings (`## 3. Coverage matrix`, `### 8.5 NVML live pass`) are *sections*: they
number the items beneath them and may be linked to, but they are not counted for coverage.
Each requirement carries a hash of its own text (whitespace-normalised), so a link reviewed
against one wording turns *suspect* when the wording changes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from stepgraph.dsl.cache_dir import cache_root, keep_json, read_kept_json
from stepgraph.dsl.reports.errors import InputError, read_text

if TYPE_CHECKING:
    from markdown_it.token import Token

MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdown", ".mkd"}
ID_HEADER_NAMES = {"id", "req", "requirement", "requirement id"}
_ID = r"(?:[A-Z]{1,3}\d+|\d+)(?:\.\d+)*"
ID_PATTERN = re.compile(rf"^{_ID}$")
_HEADING = re.compile(rf"^(?P<section>§\s*)?(?P<id>{_ID})[.:]?(?:\s+|$)(?P<title>.*)$")
_TITLE_TRIM = " \t—–-:.*"


def normalise_id(raw: str) -> str:
    """`§8.5.1`, `8.5.1.`, `` `A3` `` and `**A3**` all name the same requirement."""
    return raw.strip().strip("`*_ ").removeprefix("§").strip().rstrip(".")


def content_hash(text: str) -> str:
    """A short, reflow-proof fingerprint of a requirement's wording."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Requirement:
    id: str
    title: str
    kind: str  # "heading" | "table" | "item" | "section"
    path: str
    line: int
    hash: str

    @property
    def counts_for_coverage(self) -> bool:
        return self.kind != "section"


@dataclass
class DesignDoc:
    path: str  # the document's name in the trace
    requirements: dict[str, Requirement] = field(default_factory=dict)
    file: str = ""  # where it was read from, when that is not `path` (the lock names documents from the lock's folder)

    def coverage_ids(self) -> list[str]:
        return [rid for rid, req in self.requirements.items() if req.counts_for_coverage]


@dataclass
class _Heading:
    level: int
    start: int  # 0-based source line
    rid: str | None
    title: str
    is_section: bool
    end: int = 0


def parse_design_doc(path: str | Path, name: str | None = None) -> DesignDoc:
    """Read one Markdown design document, named `name` in the trace (default: `path`); raise
    InputError on anything that is not one."""
    path = str(path)
    suffix = Path(path).suffix.lower()
    if suffix not in MARKDOWN_SUFFIXES:
        raise InputError(path, 1, f"design document is not Markdown (suffix {suffix or 'none'!r})",
                         "pass a .md file")
    text = read_text(path, "design document")
    doc = parse_design_text(text, path)
    if name is None or name == path:
        return doc
    requirements = {rid: replace(req, path=name) for rid, req in doc.requirements.items()}
    return DesignDoc(name, requirements, file=path)


def parse_design_text(text: str, path: str = "<text>") -> DesignDoc:
    from markdown_it import MarkdownIt  # imported here: a run whose design doc is cached never needs it

    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    lines = text.splitlines()
    headings = _headings(tokens, len(lines))
    if not headings:
        raise InputError(path, 1, "no Markdown headings found: this does not look like a design document",
                         "pass the Markdown design document (with `#` headings)")
    doc = DesignDoc(path)
    for found in _requirements(tokens, headings, lines, path):
        first = doc.requirements.get(found.id)
        if first is not None:
            raise InputError(path, found.line, f"requirement id {found.id} is defined twice (first at line {first.line})",
                             "give each requirement its own id")
        doc.requirements[found.id] = found
    if not doc.coverage_ids():
        raise InputError(path, 1, "no requirement ids found",
                         "mark requirements as `### A1 Title` headings, `| ID | … |` tables or numbered items under `### 8.5 …`")
    return doc


def _headings(tokens: list[Token], n_lines: int) -> list[_Heading]:
    found: list[_Heading] = []
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open" or tok.map is None:
            continue
        # Text only: `### <a id="B5"></a>B5 — …` keeps its anchor out of the id and title.
        text = "".join(c.content for c in tokens[i + 1].children or [] if c.type != "html_inline").strip()
        match = _HEADING.match(text)
        rid = title = None
        is_section = False
        if match:
            rid = match["id"]
            title = match["title"].strip(_TITLE_TRIM) or rid
            is_section = rid[0].isdigit() and not match["section"]
        found.append(_Heading(int(tok.tag[1:]), tok.map[0], rid, title or text, is_section))
    for k, head in enumerate(found):  # a heading's text runs to the next heading at its level or above
        head.end = next((h.start for h in found[k + 1:] if h.level <= head.level), n_lines)
    return found


def _requirements(tokens: list[Token], headings: list[_Heading], lines: list[str], path: str) -> Iterable[Requirement]:
    """Every requirement in document order (so "defined twice" names the earlier one first)."""
    heads = iter(headings)
    current: _Heading | None = None
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            current = next(heads)
            if current.rid:
                kind = "section" if current.is_section else "heading"
                text = "\n".join(lines[current.start:current.end])
                yield Requirement(current.rid, current.title, kind, path, current.start + 1, content_hash(text))
        elif tok.type == "table_open":
            yield from _table_rows(tokens, i, lines, path)
        elif tok.type == "ordered_list_open" and tok.level == 0 and current and current.is_section:
            yield from _numbered_items(tokens, i, current, lines, path)


def _table_rows(tokens: list[Token], start: int, lines: list[str], path: str) -> Iterable[Requirement]:
    rows: list[list[str]] = []
    row_lines: list[int] = []
    for tok in tokens[start:]:
        if tok.type == "table_close":
            break
        if tok.type == "tr_open":
            rows.append([])
            row_lines.append(tok.map[0] if tok.map else 0)
        elif tok.type == "inline" and rows:
            rows[-1].append(tok.content)
    if not rows or not rows[0] or rows[0][0].strip().lower() not in ID_HEADER_NAMES:
        return
    for cells, line in zip(rows[1:], row_lines[1:], strict=True):
        rid = normalise_id(cells[0]) if cells else ""
        if not ID_PATTERN.match(rid):
            continue
        title = _first_sentence(cells[1]) if len(cells) > 1 else rid
        yield Requirement(rid, title, "table", path, line + 1, content_hash(lines[line]))


def _numbered_items(tokens: list[Token], start: int, section: _Heading, lines: list[str], path: str) -> Iterable[Requirement]:
    depth = 0
    for k in range(start, len(tokens)):
        tok = tokens[k]
        if tok.type in ("ordered_list_open", "bullet_list_open"):
            depth += 1
        elif tok.type in ("ordered_list_close", "bullet_list_close"):
            depth -= 1
            if depth == 0:
                return
        elif tok.type == "list_item_open" and depth == 1 and tok.map:
            number = tok.info or "0"
            inline = next(t for t in tokens[k:] if t.type == "inline")
            rid = f"{section.rid}.{number}"
            yield Requirement(rid, _item_title(inline), "item", path, tok.map[0] + 1,
                              content_hash("\n".join(lines[tok.map[0]:tok.map[1]])))


def _item_title(inline: Token) -> str:
    """`**Planner-side annotations land** (A1/A2 live). …` → `Planner-side annotations land`."""
    children = [c for c in inline.children or [] if c.type != "text" or c.content]
    if children and children[0].type == "strong_open":
        words = []
        for child in children[1:]:
            if child.type == "strong_close":
                break
            words.append(child.content)
        if words:
            return " ".join("".join(words).split()).strip(_TITLE_TRIM)
    return _first_sentence(inline.content)


def _first_sentence(text: str, limit: int = 90) -> str:
    plain = " ".join(re.sub(r"[*`]", "", text).split())
    sentence = re.split(r"(?<=[.!?])\s", plain, maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def requirement_ids(path: str | Path) -> set[str]:
    """Every id a design document defines (requirements and sections), e.g. for the DSL's static check 9.

    Every run and lint asks for them, and importing the Markdown parser and reading the document
    cost more than a lint of a small file takes in all, so the ids of a document read cleanly
    are kept on disk, named by its bytes, its suffix and the parser's code (this module, the
    markdown-it release and the interpreter's). A document that cannot be read, or is not a design document, is
    never kept: it is read again, and reported as ever."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return set(parse_design_doc(path).requirements)
    kept = cache_root() / "design-ids" / f"{_ids_key(data, Path(path).suffix.lower())}.json"
    kept_ids = read_kept_json(kept)
    # only what this function writes is taken: anything else there is someone else's file, and
    # the document is read instead
    if isinstance(kept_ids, list) and all(isinstance(i, str) for i in kept_ids):
        return set(kept_ids)
    ids = set(parse_design_doc(path).requirements)
    keep_json(kept, sorted(ids))
    return ids


def _ids_key(data: bytes, suffix: str) -> str:
    key = hashlib.sha256(sys.version.encode() + b"\0" + suffix.encode() + b"\0" + data)
    key.update(Path(__file__).read_bytes())
    key.update(Path(read_text.__code__.co_filename).read_bytes())  # how the document's bytes become text
    spec = importlib.util.find_spec("markdown_it")  # found without being imported; its __init__ names the release
    if spec is not None and spec.origin is not None:
        key.update(Path(spec.origin).read_bytes())
    return key.hexdigest()[:32]
