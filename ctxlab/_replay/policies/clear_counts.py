"""Count-only form of LangChain's `ClearToolUsesEdit` stage (`ctxlab._replay.policies.counts_only`).

With its defaults (`clear_at_least=0`, results only) the edit is monotone: it acts from the
first call whose uncompacted messages, by the edit's own counter, exceed `trigger` (a count
that only grows with the history), and from then on every result but the last `keep` is
cleared, except results it never clears (no owning call in the nearest assistant message
before them, an excluded tool, cleared already). So a call's counts are the uncompacted ones
less what the cleared results no longer cost: a prefix sum up to the last cleared one.
`ClearStage` remains the reference (tests/test_counts_only.py); other settings get it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from langchain_core.messages import AIMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._replay.policies._engine_facts import TraceFacts, facts
from ctxlab._replay.policies.base import make_event
from ctxlab._replay.policies.counts_only import (
    CallCounts,
    cumulative,
    fed_lengths,
    raw_counts,
    with_stubs,
)
from ctxlab._replay.policies.langchain import ClearStage, _cleared_result

if TYPE_CHECKING:
    from ctxlab._trace import Trace


def _clearable(
    history: TraceFacts, stage: ClearStage
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The history's tool results: positions, whether the edit would clear each (its nearest
    assistant message before it makes its call, its tool is not excluded, it is not cleared
    already), their tokens and their cleared copies' tokens (the run's counter)."""
    key = f"clearable {stage.placeholder!r} {sorted(stage.exclude)!r}"
    return history.kept(key, lambda: _find_clearable(history, stage))


def _find_clearable(
    history: TraceFacts, stage: ClearStage
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`_clearable`, found in one pass over the history."""
    cpt = history.chars_per_token
    pos, ok, toks, stub_toks = [], [], [], []
    last_ai: AIMessage | None = None
    for i, (message, kind, count) in enumerate(
        zip(history.messages, history.kinds, history.counts, strict=True)
    ):
        if kind == "ai" and isinstance(message, AIMessage):
            last_ai = message
            continue
        if kind == "ai" or not isinstance(message, ToolMessage):
            continue
        owner = last_ai.tool_calls if last_ai is not None else []
        call = next((c for c in owner if c.get("id") == message.tool_call_id), None)
        clears = (
            call is not None
            and not message.response_metadata.get("context_editing", {}).get("cleared")
            and (message.name or call["name"]) not in stage.exclude
        )
        stub = 0
        if clears:
            copy = tk.derived(
                message,
                ("clear", stage.placeholder),
                lambda m=message: _cleared_result(m, stage.placeholder),
            )
            stub = tk.message_tokens(copy, cpt)
        pos.append(i)
        ok.append(clears)
        toks.append(count if clears else 0)
        stub_toks.append(stub)
    return (
        np.asarray(pos, dtype=np.int64),
        np.asarray(ok, dtype=bool),
        np.asarray(toks, dtype=np.int64),
        np.asarray(stub_toks, dtype=np.int64),
    )


def _non_system_prefix(own: TraceFacts) -> np.ndarray:
    """Tokens of the history's first k messages but system ones (`[k]`), kept per trace and
    counter."""
    return own.kept(
        "non-system prefix",
        lambda: cumulative(
            [0 if k == "system" else c for k, c in zip(own.kinds, own.counts, strict=True)]
        ),
    )


def clear_counts(
    trace: Trace, history: TraceFacts, stage: ClearStage, tools: int
) -> CallCounts | None:
    """`ClearStage` over `trace` with `clear_at_least=0` and results only; None otherwise (or
    for a negative `keep`), which the full engine replays."""
    if stage.clear_at_least or stage.clear_tool_inputs or stage.keep < 0:
        return None
    fed = fed_lengths(trace)
    raw = raw_counts(history, fed, tools)
    pos, ok, toks, stub_toks = _clearable(history, stage)
    # the edit's own count: the request's messages but the system prompt, by its counter
    counted = _non_system_prefix(facts(trace, stage.cpt))[fed]
    over = counted > stage.trigger
    results = np.searchsorted(pos, fed)  # tool results in the history at each call
    upto = np.where(over & (stage.keep < results), results - stage.keep, 0)
    orig = cumulative(toks)[upto]
    stub = cumulative(stub_toks)[upto]
    edited = with_stubs(raw, orig, stub)
    events, turns = edited.events, trace.turns
    before, after, own_count = (
        raw.context_tokens.tolist(),
        edited.context_tokens.tolist(),
        counted.tolist(),
    )
    at, clears, ups = pos.tolist(), ok.tolist(), upto.tolist()
    done = 0
    for t in np.flatnonzero(upto > np.concatenate(([0], upto[:-1]))).tolist():
        new = tuple(at[j] for j in range(done, ups[t]) if clears[j])
        done = ups[t]
        if new:
            reason = f"{own_count[t]} > {stage.trigger} tokens"
            events[t].append(
                make_event(stage.kind, turns[t].index, new, before[t], after[t], None, reason)
            )
    return edited


__all__ = ["clear_counts"]
