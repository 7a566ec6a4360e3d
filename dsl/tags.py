"""Scenario tags: the namespaces the language owns (`@id:`, `@design:`, `@needs:`) and free tags.

A free tag (`@slow`, `@conflict`, `@team:power`) is allowed and only becomes a pytest marker. A tag
that looks like one of ours but is not (`@desing:B5`, `@id`, `@needs=nvml`, `@xfail`) would silently trace
to nothing, so it is an error with the spelling that was meant.
"""

from __future__ import annotations

import difflib
import re

#: Namespace → what its value is. `source` is written by the collector for generated features.
OWNED_KINDS = {
    "id": "requirement id, e.g. @id:B5",
    "design": "design-doc id, e.g. @design:8.5.7",
    "needs": "capability, e.g. @needs:nvml",
    "source": "the YAML file and line a generated scenario comes from, e.g. @source:s.yaml:3",
}

#: pytest's own markers change how a test runs (a `@xfail` scenario that fails still exits 0), so a
#: scenario tag may not borrow their names.
PYTEST_MARKERS = frozenset({"skip", "skipif", "xfail", "usefixtures", "parametrize", "filterwarnings"})

_SEPARATOR = re.compile(r"=")


def tag_problem(tag: str) -> tuple[str, str] | None:
    """(what is wrong, what to do) for a tag (without its @) that cannot mean what it says, else None."""
    if not tag:
        return ("a bare `@` is not a tag", "write the tag's name right after the @, or remove the @")
    if tag.startswith("_"):
        # pytest refuses marker names with a leading underscore, which breaks collection of the file
        return (f"@{tag} starts with `_`, which a pytest marker name may not", f"write it @{tag.lstrip('_') or 'name'}")
    if "@" in tag:
        return (f"@{tag} holds another @", "separate tags with a space")
    kind, colon, value = tag.partition(":")
    if colon:
        if kind in OWNED_KINDS:
            if not value:
                return (f"@{tag} has no value", f"write it like {_example(kind)}")
            if kind == "id" and ":" in value:  # as in YAML's `id:`; a second colon is a typo or two tags run together
                return (f"@{tag}: an id has no `:`", f"write it like {_example(kind)}")
            return None
        close = difflib.get_close_matches(kind.lower(), list(OWNED_KINDS), n=1, cutoff=0.6)
        if close:
            return (f"unknown tag namespace {kind!r} in @{tag}", f"did you mean @{close[0]}:{value}?")
        return None
    if tag in OWNED_KINDS:
        return (f"@{tag} has no value", f"write it like {_example(tag)}")
    if tag in PYTEST_MARKERS:
        return (f"@{tag} is a pytest marker, not a scenario tag: it would change how the scenario runs", "remove it, or rename the tag")
    head = _SEPARATOR.split(tag, maxsplit=1)
    if len(head) == 2 and head[0] in OWNED_KINDS and head[1]:
        return (f"@{tag} is a free tag, not a {head[0]} tag", f"write it @{head[0]}:{head[1]}")
    return None


def _example(kind: str) -> str:
    return OWNED_KINDS[kind].split("e.g. ", 1)[-1]
