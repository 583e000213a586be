"""Redaction markers: what a shared trace kept of the text it hid.

People share traces with every text and argument replaced by a marker that keeps the hidden
text's length and a hash, `[REDACTED_TEXT len=1234 sha=9f2c...]` (also `REDACTED_ARGUMENTS`,
`REDACTED_MESSAGE`, ...). The recorded usage is intact and is what a compaction trigger needs;
the readers keep the markers as the text (`ctxlab._ingest.formats.redaction`), and the
approximate counter charges each marker the `len=N` characters it stands for, so a redacted
trace counts as its original did, within the few characters of JSON punctuation a marker
replaces.
"""

from __future__ import annotations

import re
from typing import Any

MARK = "[REDACTED_"
"""How every marker starts: a cheap substring test before the regular expression."""

_MARKER = re.compile(r"\[REDACTED_[A-Z_]+\b[^\]]*?\blen=(\d+)[^\]]*\]")
"""A marker that says how long the hidden text was."""


def is_redacted(text: str) -> bool:
    """True when `text` holds a redaction marker."""
    return MARK in text


def hidden_chars(text: str) -> int:
    """Characters the markers in `text` hide beyond their own length (0 without markers):
    what a counter adds to `len(text)` to count the text the markers replaced."""
    if MARK not in text:
        return 0
    return sum(int(m.group(1)) - (m.end() - m.start()) for m in _MARKER.finditer(text))


def hidden_in(value: Any) -> int:
    """`hidden_chars` over every string inside `value` (dicts, lists, tuples: tool-call
    arguments and content blocks)."""
    kind = type(value)
    if kind is str:
        return hidden_chars(value)
    if kind is dict:
        return sum(hidden_in(v) for v in value.values())
    if kind is list or kind is tuple:
        return sum(hidden_in(v) for v in value)
    return 0


__all__ = ["MARK", "hidden_chars", "hidden_in", "is_redacted"]
