"""The formats a file that matched none looks most like, for the "unknown trace format" error.

Listing all fifteen descriptions made a 1,500-character error that nobody reads; the user needs
the two or three formats their file was probably meant to be, and where the rest are listed.
Closeness is the number of keys the file's first object shares with the keys a format's
description names (`'sessionId'`, `'run_type'`); ties keep the order formats are tried in.
"""

from __future__ import annotations

import re
from typing import Any

from ctxlab._ingest.formats import registry

LANGSMITH = (
    "LangSmith runs (objects with 'id' and 'run_type', 'trace_id' or 'dotted_order')",
    "LangSmith ingestion ops ({'post': [...], 'patch': [...]})",
    "a LangSmith webhook payload ({'runs': [...]})",
    "a message list (OpenAI, Anthropic or LangChain: objects with 'role' or 'type' and 'content')",
)
"""The shapes `ctxlab.load` reads itself (LangSmith records are merged across files)."""

MORE = "every format: docs/formats.md"

_KEY = re.compile(r"'([A-Za-z_][\w.*]*)'")


def descriptions() -> list[str]:
    """Every format's description, in the order formats are tried."""
    return [*LANGSMITH, *(module.DESCRIPTION for module in registry.FORMATS)]


def _keys(value: Any) -> set[str]:
    """The keys of `value`, or of the first few objects of a list."""
    if isinstance(value, dict):
        return set(map(str, value))
    if isinstance(value, list):
        return {str(k) for item in value[:5] if isinstance(item, dict) for k in item}
    return set()


def closest(value: Any, count: int = 3) -> list[str]:
    """The `count` format descriptions whose named keys `value` shares most."""
    keys = _keys(value)
    known = descriptions()
    score = [len(keys & set(_KEY.findall(text))) for text in known]
    order = sorted(range(len(known)), key=lambda i: -score[i])
    return [known[i] for i in order[:count]]


def unknown_format(value: Any, described: str) -> str:
    """The error text for `value` (`described` as `got ...`): the closest formats and where
    the others are listed."""
    return f"unknown trace format: got {described}; closest: {'; '.join(closest(value))} ({MORE})"


__all__ = ["closest", "descriptions", "unknown_format"]
