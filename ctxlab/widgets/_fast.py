"""`CachedExtractive`: the offline `Extractive` summary, with per-message work cached.

A slider re-replays the same trace many times; each replay summarises overlapping slices of
the same message objects, and `Extractive` re-reads every message's text and re-runs its
regexes (paths, error lines, identifiers, numbers) each time: 25 ms a summary on a catalogue
preset's long slices, 300 ms a 1,000-turn replay. This subclass keeps those per-message facts
once per message object and assembles the identical text for any prompt (the tests compare
both on every slice of real replays), so live re-replays stay near the replay's own cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage

from ctxlab.summarizers import Extractive, Memo


@dataclass(frozen=True)
class CachedExtractive(Extractive):
    """Same output and `name` as `Extractive(max_items, line_chars)`; faster when reused."""

    _cache: dict[tuple[int, str], tuple[BaseMessage, Any]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def _memo(self) -> Memo:
        cache = self._cache

        def memo(message: BaseMessage, fact: str, compute: Callable[[], Any]) -> Any:
            key = (id(message), fact)
            hit = cache.get(key)
            if hit is not None and hit[0] is message:
                return hit[1]
            value = compute()
            if len(cache) > 1_000_000:
                cache.clear()
            cache[key] = (message, value)  # holding `message` keeps its id from being reused
            return value

        return memo
