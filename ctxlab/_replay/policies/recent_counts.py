"""Count-only form of OpenHands' `RecentEventsCondenser` stage
(`ctxlab._replay.policies.counts_only`).

The request is the first `keep_first` messages and the last `max_events - keep_first`, its
cut moved forward past tool results (`safe_start`); recomputed every call, and with a
history that only grows the cut only moves forward. So a call's counts are two slices of the
history's per-kind prefix sums, and its event lists the messages the cut passed since the
previous call. `RecentStage` remains the reference (tests/test_counts_only.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from langchain_core.messages import ToolMessage

from ctxlab._messages import KINDS
from ctxlab._replay.policies._engine_facts import TraceFacts
from ctxlab._replay.policies.base import Event, make_event
from ctxlab._replay.policies.counts_only import (
    CallCounts,
    fed_lengths,
    history_prefix,
    kind_prefix,
)

if TYPE_CHECKING:
    from ctxlab._replay.policies.openhands import RecentStage
    from ctxlab._trace import Trace


def _next_non_tool(history: TraceFacts) -> np.ndarray:
    """`[i]`: the first index at or after i whose message is not a tool result (n past the
    end): where `safe_start` moves a cut at i, before the history's end caps it."""

    def make() -> np.ndarray:
        n = len(history.messages)
        out = np.empty(n + 1, dtype=np.int64)
        out[n] = n
        for i in range(n - 1, -1, -1):
            out[i] = out[i + 1] if isinstance(history.messages[i], ToolMessage) else i
        return out

    return history.kept("next non-tool", make)


def recent_counts(
    trace: Trace, history: TraceFacts, stage: RecentStage, tools: int
) -> CallCounts | None:
    """`RecentStage` over `trace` (None for a negative setting, which the full engine takes)."""
    if stage.keep_first < 0 or stage.max_events < 0:
        return None
    fed = fed_lengths(trace)
    head = np.minimum(stage.keep_first, fed)
    tail = np.maximum(0, stage.max_events - head)
    cut = np.where(tail > 0, np.maximum(head, fed - tail), fed)
    start = np.minimum(_next_non_tool(history)[cut], fed)
    prefix = kind_prefix(history)
    by_kind = {k: prefix[k][head] + prefix[k][fed] - prefix[k][start] for k in KINDS}
    by_kind["tools"] = by_kind["tools"] + tools
    context = np.add.reduce([by_kind[k] for k in KINDS])
    every = history_prefix(history)
    baseline = tools + every[fed]
    events: list[list[Event]] = [[] for _ in fed]
    turns, reason = trace.turns, f"max_events={stage.max_events}"
    before, after = baseline.tolist(), context.tolist()
    heads, starts = head.tolist(), start.tolist()
    previous = 0
    for t in range(len(fed)):
        lo, hi = max(heads[t], previous), starts[t]
        previous = hi
        if hi > lo:
            events[t].append(
                make_event(
                    "forget",
                    turns[t].index,
                    tuple(range(lo, hi)),
                    before[t],
                    after[t],
                    None,
                    reason,
                )
            )
    return CallCounts(head + fed - start, context, by_kind, baseline, events)


__all__ = ["recent_counts"]
