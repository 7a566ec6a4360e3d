"""close_match gives what difflib.get_close_matches(text, candidates, n=1, cutoff) gives — it
only skips candidates sooner — and its bound, the longest common subsequence, is that length."""

from __future__ import annotations

import difflib
import random
from collections import Counter

import pytest

from stepgraph.dsl import REGISTRY
from stepgraph.dsl.close_match import _letters, _unary, close_match, common_subsequence_length


def _difflib(text: str, candidates: tuple[str, ...], cutoff: float) -> str | None:
    found = difflib.get_close_matches(text, list(candidates), n=1, cutoff=cutoff)
    return found[0] if found else None


def _longest_common_subsequence(a: str, b: str) -> int:
    previous = [0] * (len(b) + 1)
    for x in a:
        row = [0]
        for j, y in enumerate(b):
            row.append(previous[j] + 1 if x == y else max(previous[j + 1], row[j]))
        previous = row
    return previous[-1]


def test_the_common_subsequence_length_is_the_longest() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        a = "".join(rng.choice("abc d") for _ in range(rng.randint(0, 40)))
        b = "".join(rng.choice("abc d") for _ in range(rng.randint(0, 40)))
        assert common_subsequence_length(a, b) == _longest_common_subsequence(a, b), (a, b)


@pytest.mark.parametrize("cutoff", [0.0, 0.3, 0.5, 0.6, 0.75, 0.9, 1.0])
def test_random_texts_get_difflib_s_answer(cutoff: float) -> None:
    rng = random.Random(int(cutoff * 100))
    for _ in range(300):
        candidates = tuple({"".join(rng.choice("abcab ") for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(0, 8))})
        text = "".join(rng.choice("abcab ") for _ in range(rng.randint(0, 12)))
        assert close_match(text, candidates, cutoff) == _difflib(text, candidates, cutoff), (text, candidates)


def test_step_phrases_and_their_misspellings_get_difflib_s_answer() -> None:
    REGISTRY.load_entry_points()
    phrases = tuple(sorted({d.phrase.text for d in REGISTRY.declared()}))
    rng = random.Random(3)
    texts = list(phrases)
    for phrase in phrases:
        chars = list(phrase)
        for _ in range(rng.randint(1, 8)):
            chars[rng.randrange(len(chars))] = rng.choice("aeiou xyz")
        texts.append("".join(chars))
    texts += ["Scenarios that need no cluster: they run on every target, the built-in `local` one included.", "", "the"]
    for text in texts:
        for cutoff in (0.5, 0.75):
            assert close_match(text, phrases, cutoff) == _difflib(text, phrases, cutoff), text


def test_the_letters_two_strings_share_are_the_set_bits_their_unary_counts_share() -> None:
    # The quick ratio's numerator, counts included: what difflib's quick_ratio counts letter by letter.
    rng = random.Random(11)
    for _ in range(300):
        candidates = tuple("".join(rng.choice("aab c") for _ in range(rng.randint(0, 10))) for _ in range(rng.randint(1, 6)))
        text = "".join(rng.choice("aab cd") for _ in range(rng.randint(0, 14)))
        fields, letters = _letters(candidates)
        for candidate, _, unary in letters:
            shared = sum((Counter(text) & Counter(candidate)).values())
            assert (_unary(Counter(text), fields) & unary).bit_count() == shared, (text, candidate)
