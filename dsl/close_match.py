"""`difflib.get_close_matches(text, candidates, n=1, cutoff)` with the same answer, sooner, for
many texts against one fixed set of candidates (every description line of a file against every
step phrase).

difflib keeps a candidate whose similarity ratio reaches the cutoff, trying two cheaper upper
bounds of the ratio first: the lengths, then the letters both hold (as multisets), recounting the
candidate's letters for each text. Description lines pass both against some phrase and then fail
the ratio, the costly part. Here each candidate's letters are counted once per set of
candidates, and a third bound comes before the ratio: the longest common subsequence of the two
(the blocks the ratio counts are one such subsequence, so the ratio is never above it), found with
bit-parallel arithmetic on Python integers. The ratio itself is difflib's, and of candidates with
the same ratio the larger string wins, as in difflib."""

from __future__ import annotations

import functools
from collections import Counter
from difflib import SequenceMatcher

Letters = tuple[str, int, tuple[str, ...], tuple[int, ...], tuple[int, ...]]


@functools.lru_cache(maxsize=4)
def _letters(candidates: tuple[str, ...]) -> tuple[Letters, ...]:
    """Each candidate, its length, its distinct letters with how often each occurs, and as many zeros."""
    counted = [(c, Counter(c)) for c in candidates]
    return tuple((c, len(c), tuple(n), tuple(n.values()), (0,) * len(n)) for c, n in counted)


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
    counts = Counter(text).get
    size = len(text)
    best: tuple[float, str] | None = None
    matcher: SequenceMatcher[str] | None = None
    masks: dict[str, int] | None = None  # the text's, for the subsequence bound: made once
    for candidate, length, letters, numbers, zeros in _letters(candidates):
        total = length + size  # (two empty strings are alike: difflib's ratio of them is 1)
        if total and 2.0 * min(length, size) / total < cutoff:  # difflib's real_quick_ratio
            continue
        if total and 2.0 * sum(map(min, numbers, map(counts, letters, zeros))) / total < cutoff:  # its quick_ratio
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
