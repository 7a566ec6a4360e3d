"""`difflib.get_close_matches(text, candidates, n=1, cutoff)` with the same answer, sooner, for
many texts against one fixed set of candidates (every description line of a file against every
step phrase).

difflib keeps a candidate whose similarity ratio reaches the cutoff, trying two cheaper upper
bounds of the ratio first: the lengths, then the letters both hold (as multisets), recounting the
candidate's letters for each text. Description lines pass both against some phrase and then fail
the ratio, the costly part. Here the letters both hold are counted with one AND of two integers:
each string's letters are written in unary, every letter in a field of its own as wide as its
count in the candidate that has most of it (the text's counts cut to that width, as a candidate
never shares more than it has), so the set bits two strings share are the letters they share,
counts included. And a third bound comes before the ratio: the longest common subsequence of the
two (the blocks the ratio counts are one such subsequence, so the ratio is never above it), found
with bit-parallel arithmetic on Python integers. The ratio itself is difflib's, and of candidates
with the same ratio the larger string wins, as in difflib."""

from __future__ import annotations

import functools
from collections import Counter
from difflib import SequenceMatcher

#: Where each letter's field begins in a set of candidates' unary counts, and how wide it is.
Fields = dict[str, tuple[int, int]]


@functools.lru_cache(maxsize=4)
def _letters(candidates: tuple[str, ...]) -> tuple[Fields, tuple[tuple[str, int, int], ...]]:
    """The letters' fields of a set of candidates, and each candidate with its length and its
    letters in unary (see the module's text)."""
    counted = [(c, Counter(c)) for c in candidates]
    widths: dict[str, int] = {}
    for _, counts in counted:
        for letter, count in counts.items():
            widths[letter] = max(widths.get(letter, 0), count)
    fields: Fields = {}
    start = 0
    for letter, width in widths.items():
        fields[letter] = (start, width)
        start += width
    return fields, tuple((c, len(c), _unary(counts, fields)) for c, counts in counted)


def _unary(counts: Counter[str], fields: Fields) -> int:
    """`counts` in unary in `fields`: each letter's count (cut to its field) as that many set bits."""
    bits = 0
    for letter, count in counts.items():
        field = fields.get(letter)
        if field is not None:
            start, width = field
            bits |= ((1 << min(count, width)) - 1) << start
    return bits


def common_subsequence_length(a: str, b: str) -> int:
    """The length of a longest common subsequence of `a` and `b` (Hyyrö's bit-parallel form: one
    bit per character of `b`, a zero for each character of a common subsequence found so far)."""
    return _subsequence_length(a, _masks(b), len(b))


def _masks(b: str) -> dict[str, int]:
    """Each character of `b`, with a bit set for each place it is at."""
    masks: dict[str, int] = {}
    for i, char in enumerate(b):
        masks[char] = masks.get(char, 0) | (1 << i)
    return masks


def _subsequence_length(a: str, masks: dict[str, int], size: int) -> int:
    """`common_subsequence_length(a, b)` given `_masks(b)` and the length of `b`."""
    full = (1 << size) - 1
    row = full
    for char in a:
        matched = row & masks.get(char, 0)
        row = ((row + matched) | (row - matched)) & full
    return size - row.bit_count()


def close_match(text: str, candidates: tuple[str, ...], cutoff: float) -> str | None:
    """The candidate difflib.get_close_matches(text, candidates, n=1, cutoff=cutoff) gives, or None."""
    fields, letters = _letters(candidates)
    unary: int | None = None  # the text's letters, for the quick ratio: made once
    size = len(text)
    best: tuple[float, str] | None = None
    matcher: SequenceMatcher[str] | None = None
    masks: dict[str, int] | None = None  # the text's, for the subsequence bound: made once
    for candidate, length, candidate_unary in letters:
        total = length + size  # (two empty strings are alike: difflib's ratio of them is 1)
        if total and 2.0 * min(length, size) / total < cutoff:  # difflib's real_quick_ratio
            continue
        if unary is None:
            unary = _unary(Counter(text), fields)
        if total and 2.0 * (unary & candidate_unary).bit_count() / total < cutoff:  # its quick_ratio
            continue
        if masks is None:
            masks = _masks(text)
        if total and 2.0 * _subsequence_length(candidate, masks, size) / total < cutoff:
            continue
        if matcher is None:
            matcher = SequenceMatcher()
            matcher.set_seq2(text)
        matcher.set_seq1(candidate)
        score = matcher.ratio()
        if score >= cutoff and (best is None or (score, candidate) > best):
            best = (score, candidate)
    return None if best is None else best[1]
