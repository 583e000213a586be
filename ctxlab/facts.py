"""Typed facts of a conversation and where each one survives a replay (docs/facts.md,
docs/evaluate.md): `extract(trace)` finds them, `mentions` tells whether a text still holds one,
`follow(replay, facts)` gives each fact's status at every turn (in context, only in a summary,
only in a file, lost) and `survival_table` sums them by category.

The public face of ctxlab's private modules: import from here.
"""

from ctxlab._evaluate.evaluation import trace_facts
from ctxlab._evaluate.facts import CATEGORIES, Fact, extract, mentions, message_text
from ctxlab._evaluate.survival import (
    FACT_SCHEMA,
    STATUSES,
    SURVIVAL_SCHEMA,
    follow,
    index,
    survival_table,
)

__all__ = [
    "CATEGORIES",
    "FACT_SCHEMA",
    "Fact",
    "STATUSES",
    "SURVIVAL_SCHEMA",
    "extract",
    "follow",
    "index",
    "mentions",
    "message_text",
    "survival_table",
    "trace_facts",
]
