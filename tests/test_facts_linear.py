"""Fact matching in time linear in the text: the regular expression `bounded` scans with and
the vectorised boundary check survival runs on long texts decide exactly what testing every
occurrence with `_fits` decides (the rule `mentions` documents), on texts built to put
occurrences at every kind of boundary: runs of one character, escapes, paths, non-ASCII."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab._evaluate import survival
from ctxlab._evaluate.facts import Fact, _fits, bounded, mentions_normalised, normalise
from ctxlab._evaluate.survival import Finder

PIECES = ("a", "é", "_", "1", "²", "/", ".", "-", "~", "\\", "n", "t", "\\n", " ", "/a", "a.")
"""Word characters (ASCII and not), the characters `_fits` treats specially, a `\\n` escape,
a separator, and the short tokens facts are made of."""

texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)
keys = (
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=3)
    .map("".join)
    .filter(lambda k: k == normalise(k) and k != "")
)


def every_occurrence(haystack: str, key: str) -> bool:
    """The definition: some occurrence of `key`, tested one by one, fits."""
    at = haystack.find(key)
    while at >= 0:
        if _fits(haystack, at, key):
            return True
        at = haystack.find(key, at + 1)
    return False


@settings(max_examples=1000, deadline=None)
@given(texts, keys)
def test_bounded_is_every_occurrence_tested(haystack: str, key: str) -> None:
    assert bounded(haystack, key) == every_occurrence(haystack, key)


@settings(max_examples=500, deadline=None)
@given(st.lists(texts, min_size=1, max_size=4), st.lists(keys, min_size=1, max_size=4))
def test_long_text_check_is_mentions(some: list[str], facts_text: list[str]) -> None:
    """Every text through the long-text path (`LONG_TEXT` 0), as a 240,000-character one goes."""
    facts = [Fact(text, "identifier", 0) for text in dict.fromkeys(facts_text)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(survival, "LONG_TEXT", 0)
        found = Finder(facts).find(some)
    for text, held in zip(some, found, strict=True):
        want = {i for i, f in enumerate(facts) if mentions_normalised(normalise(text), f)}
        assert held == want, text


def test_a_run_of_one_character_is_not_a_token_inside_itself() -> None:
    """The case that was slow: a fact cut from a long run is found at no offset of the run
    (each occurrence continues a longer token), and the edge of the run still counts."""
    run = "a" * 240_000
    fact = Fact("a" * 300, "goal", 0)
    assert Finder([fact]).find([run, run + " " + fact.text]) == [set(), {0}]
    assert not bounded(run, fact.text)
    assert bounded("=" * 240_000, "=" * 300)
