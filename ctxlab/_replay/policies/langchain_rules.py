"""LangChain v1's `SummarizationMiddleware` rules (langchain 1.5.2) that more than one policy
follows: the trigger forms, the size validation and the token keep window's search. Deep
Agents' summarisation subclasses LangChain's, so both `ctxlab._replay.policies.deepagents` and
`ctxlab._replay.policies.langchain` use these; `tests/test_upstream_texts.py` checks them against
the
installed `langchain`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

DEFAULT_MESSAGES_TO_KEEP = 20
"""The message keep window a fractional `keep` falls back to without a model profile."""


def keep_search(n: int, fits: Callable[[int], bool]) -> int | None:
    """LangChain's `_determine_cutoff_index` search over a token keep window, shared by every
    policy that reuses it: the smallest start `k` whose suffix `fits`, by the same bounded
    binary search (so the same answer where `fits` is not monotone); if no suffix fits, the
    last message (`n - 1`), or None (no cutoff) for a single message. The caller applies its
    own safe point."""
    left, right, candidate = 0, n, n
    for _ in range(n.bit_length() + 1):
        if left >= right:
            break
        mid = (left + right) // 2
        if fits(mid):
            candidate, right = mid, mid
        else:
            left = mid + 1
    if candidate == n:
        candidate = left
    if candidate >= n:
        if n == 1:
            return None
        candidate = n - 1
    return candidate


def normalize_trigger(trigger: Any) -> list[dict[str, float]]:
    """LangChain's trigger forms as OR-ed clauses of AND-ed metrics (`_normalize_trigger`)."""
    if trigger is None:
        return []
    if is_pair(trigger) or not isinstance(trigger, list):
        trigger = [trigger]
    clauses: list[dict[str, float]] = []
    for item in trigger:
        clause = {item[0]: item[1]} if is_pair(item) else dict(item)
        if not clause:
            raise ValueError("trigger clause must name at least one of tokens, messages, fraction")
        for kind, value in clause.items():
            validate_size(kind, value, "trigger")
        clauses.append(clause)
    return clauses


def is_pair(item: Any) -> bool:
    """`("fraction", 0.85)`, also as the list JSON turns it into."""
    return isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)


def validate_size(kind: str, value: float, what: str) -> None:
    """`_validate_context_size`: LangChain's error for a size it refuses, word for word."""
    if kind == "fraction":
        if not 0 < value <= 1:
            raise ValueError(f"Fractional {what} values must be between 0 and 1, got {value}.")
    elif kind in {"tokens", "messages"}:
        if value <= 0:
            raise ValueError(f"{what} thresholds must be greater than 0, got {value}.")
    else:
        raise ValueError(f"Unsupported context size type {kind} for {what}.")


def size_threshold(kind: str, value: float, window: int | None) -> int | None:
    """A `tokens` or `fraction` size as a token threshold, `max(1, int(window * f))` for a
    fraction; None for a fraction without a window (such a clause is never met)."""
    if kind == "fraction":
        return None if window is None else max(1, int(window * value))
    return max(1, int(value))


def is_message_type(message: BaseMessage, types: str | type | Sequence[str | type]) -> bool:
    """Whether `message` is one of `types` (type names or classes), as `trim_messages`'
    `start_on` and `filter_messages` read them (langchain_core's `_is_message_type`)."""
    wanted = [types] if isinstance(types, str | type) else types
    names = [t for t in wanted if isinstance(t, str)]
    classes = tuple(t for t in wanted if isinstance(t, type))
    return message.type in names or isinstance(message, classes)


__all__ = [
    "DEFAULT_MESSAGES_TO_KEEP",
    "is_message_type",
    "is_pair",
    "keep_search",
    "normalize_trigger",
    "size_threshold",
    "validate_size",
]
