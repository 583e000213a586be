"""Count-only forms of the masking stages (`ctxlab.policies.counts_only`).

Masking is request-only and monotone: once a result falls out of the kept ones it stays
masked, and which results are masked at a call depends only on how many observations (or
messages) the history holds then. So a call's counts are the uncompacted ones less what the
masked results no longer cost, a prefix sum over the observations up to the last masked one,
and a call's event lists the results that crossed the line since the previous call. The stage
classes (`LastNStage`, `WindowMaskStage`) remain the reference; these give the same frame and
events (tests/test_counts_only.py) in a few array operations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.messages import ToolMessage

from ctxlab import tokens as tk
from ctxlab.policies._engine_facts import TraceFacts
from ctxlab.policies.base import Event
from ctxlab.policies.counts_only import (
    CallCounts,
    cumulative,
    fed_lengths,
    raw_counts,
    with_stubs,
)
from ctxlab.policies.masking import (
    LastNStage,
    WindowMaskStage,
    _masked,
    _swe_placeholder,
    _tags,
)

if TYPE_CHECKING:
    from ctxlab.policies.engine import Item
    from ctxlab.trace import Trace


def _results(
    facts: TraceFacts, key: Any, text: Callable[[ToolMessage], str], masked: Callable
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[frozenset[str], ...]]:
    """The history's tool results: positions, tokens, tokens of their masked copies (the
    copies the stage makes, memoised per message: `replaced` with the stage's key) and tags;
    kept per trace, counter and placeholder."""

    def make() -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[frozenset[str], ...]]:
        cpt = facts.chars_per_token
        pos, toks, stub_toks, tags = [], [], [], []
        for i, (message, count) in enumerate(zip(facts.messages, facts.counts, strict=True)):
            if not isinstance(message, ToolMessage):
                continue
            stub = tk.derived(message, key, lambda m=message: masked(m, text(m)))
            pos.append(i)
            toks.append(count)
            stub_toks.append(tk.message_tokens(stub, cpt))
            tags.append(frozenset(_tags(message)))
        return (
            np.asarray(pos, dtype=np.int64),
            np.asarray(toks, dtype=np.int64),
            np.asarray(stub_toks, dtype=np.int64),
            tuple(tags),
        )

    return facts.kept(f"masked-results {key!r}", make)


def with_masks(
    trace: Trace,
    raw: CallCounts,
    orig: np.ndarray,
    stub: np.ndarray,
    fresh: list[tuple[int, tuple[int, ...]]],
    reason: str,
) -> CallCounts:
    """`raw` with the masked results' tokens (`orig`, per call) moved to stubs (`stub`), and
    a `mask_observations` event at each call of `fresh` (call index, positions)."""
    masked = with_stubs(raw, orig, stub)
    turns = trace.turns
    before, after = raw.context_tokens.tolist(), masked.context_tokens.tolist()
    for t, positions in fresh:
        masked.events[t].append(
            Event("mask_observations", turns[t].index, positions, before[t], after[t], None, reason)
        )
    return masked


def last_n_counts(trace: Trace, facts: TraceFacts, stage: LastNStage, tools: int) -> CallCounts:
    """`LastNStage` over `trace`: the observations are the first user message and every tool
    result; all but the first and the last `n` (polled) are masked, tagged ones as tags say.
    The input is the history itself: one piece, from its start (`masked_after`)."""
    fed = fed_lengths(trace)
    raw = raw_counts(facts, fed, tools)
    orig, stub, fresh = masked_after(facts, stage, [(0, len(fed), [], 0)], fed)
    return with_masks(trace, raw, orig, stub, fresh, f"last_n_observations n={stage.n}")


def window_mask_counts(
    trace: Trace, facts: TraceFacts, stage: WindowMaskStage, tools: int
) -> CallCounts | None:
    """`WindowMaskStage` over `trace`: every tool result older than the last `window`
    messages is masked (None for a negative window, which the stage does not take)."""
    if stage.window < 0:
        return None
    text = stage.placeholder
    pos, toks, stub_toks, _ = _results(facts, ("mask", text), lambda _: text, _masked)
    fed = fed_lengths(trace)
    raw = raw_counts(facts, fed, tools)
    m = np.searchsorted(pos, fed - stage.window)  # results older than the window
    orig, stub = cumulative(toks)[m], cumulative(stub_toks)[m]
    starts = np.concatenate(([0], m[:-1]))
    fresh = [
        (int(t), tuple(int(p) for p in pos[starts[t] : m[t]])) for t in np.flatnonzero(m > starts)
    ]
    return with_masks(trace, raw, orig, stub, fresh, f"attention_window={stage.window}")


Piece = tuple[int, int, "list[Item]", int]
"""Calls `[t0, t1)` whose input is `items` then the history from `cut` on (`cut` -1: `items`
alone, at one call): how a jumping stage's output reaches the masking after it."""


def _observations(
    facts: TraceFacts, stage: LastNStage
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The history's tool results for `LastNStage` (`_results`), their tokens, their stubs'
    tokens, whether their tags remove them and whether the window may mask them; each array
    has one more entry (index -1) for the first user message, an observation never masked.
    Kept per trace, counter and the stage's tags."""

    def make() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        pos, toks, stub_toks, tags = _results(facts, ("swe-mask",), _swe_placeholder, _masked)
        every = (*tags, frozenset())
        removed = np.fromiter((bool(t & stage.remove_tags) for t in every), bool, len(every))
        kept = np.fromiter((bool(t & stage.keep_tags) for t in every), bool, len(every))
        windowed = ~kept & ~removed
        windowed[-1] = False
        return pos, np.append(toks, 0), np.append(stub_toks, 0), removed, windowed

    key = f"observations {sorted(stage.remove_tags)!r} {sorted(stage.keep_tags)!r}"
    return facts.kept(key, make)


def _humans(facts: TraceFacts) -> np.ndarray:
    """Positions of the history's user messages, kept per trace and counter."""
    return facts.kept(
        "humans",
        lambda: np.asarray([i for i, k in enumerate(facts.kinds) if k == "human"], dtype=np.int64),
    )


def masked_after(
    facts: TraceFacts, stage: LastNStage, pieces: list[Piece], fed: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, tuple[int, ...]]]]:
    """`LastNStage` over inputs that are another stage's output, given call by call as
    `pieces` (in call order): per call, the tokens of the results it masks and of their
    stubs, and the calls that mask results not masked at the call before (those positions,
    in input order)."""
    pos, toks, stub_toks, removed_all, windowed_all = _observations(facts, stage)
    index_of = {p: i for i, p in enumerate(pos.tolist())} if any(p[2] for p in pieces) else {}
    humans = _humans(facts)
    calls = len(fed)
    orig, stub = np.zeros(calls, dtype=np.int64), np.zeros(calls, dtype=np.int64)
    fresh: list[tuple[int, tuple[int, ...]]] = []
    before: set[int] = set()  # positions masked at the previous call
    for t0, t1, items, cut in pieces:
        # the input's observations in order, by position and index (-1: the first user
        # message): the items', then the history's from `cut` on (the first user message
        # among them if the items had none)
        where_l: list[int] = []
        idx_l: list[int] = []
        for it in items:
            if it.kind == "human" and -1 not in idx_l:
                where_l.append(it.pos)  # type: ignore[arg-type]
                idx_l.append(-1)
            elif isinstance(it.msg, ToolMessage) and it.kind == "tool_results":
                where_l.append(it.pos)  # type: ignore[arg-type]
                idx_l.append(index_of[it.pos])  # type: ignore[index]
        own = len(idx_l)
        where, idx = np.asarray(where_l, dtype=np.int64), np.asarray(idx_l, dtype=np.int64)
        if cut >= 0:  # the history's results the piece's calls hold: from `cut` to the last fed
            k = int(np.searchsorted(pos, cut))
            end = int(np.searchsorted(pos, fed[t1 - 1])) if t1 > t0 else k
            tail_at, tail_idx = pos[k:end], np.arange(k, end, dtype=np.int64)
            first = int(np.searchsorted(humans, cut))  # the first user message from `cut` on
            if first < len(humans) and -1 not in idx_l:
                h = int(humans[first])
                at_h = int(np.searchsorted(tail_at, h))
                tail_at, tail_idx = np.insert(tail_at, at_h, h), np.insert(tail_idx, at_h, -1)
            where, idx = np.concatenate((where, tail_at)), np.concatenate((idx, tail_idx))
        o, s_, removed = toks[idx], stub_toks[idx], removed_all[idx]
        windowed = windowed_all[idx]
        if len(windowed):
            windowed[0] = False  # the first observation is never elided
        span = np.arange(t0, t1)
        if cut >= 0:  # observations in the input at each call
            m = own + np.searchsorted(where[own:], fed[span])
        else:
            m = np.full(len(span), len(where), dtype=np.int64)
        last = np.maximum(0, (m // stage.polling) * stage.polling - stage.n)
        orig[span] = cumulative(windowed * o)[last] + cumulative(removed * o)[m]
        stub[span] = cumulative(windowed * s_)[last] + cumulative(removed * s_)[m]
        if t1 == t0:  # no call reads this input (a trace without calls)
            continue
        index = np.arange(len(where))
        # the piece's first call: what it masks, against the call before (a new input)
        masked = ((windowed & (index < last[0])) | removed)[: m[0]]
        new = [p for p in where[: m[0]][masked].tolist() if p not in before]
        if new:
            fresh.append((t0, tuple(new)))
        # its later calls (the same input grown): each masks what the window passed since the
        # call before and the tagged arrivals; both counts only grow, so an observation is
        # masked at the first call whose count passes it
        passed = np.flatnonzero(windowed[last[0] : last[-1]]) + last[0]
        arrived = np.flatnonzero(removed[m[0] : m[-1]]) + m[0]
        if len(passed) or len(arrived):
            at_call = np.concatenate(
                (np.searchsorted(last, passed, "right"), np.searchsorted(m, arrived, "right"))
            )
            found = np.concatenate((passed, arrived))
            order = np.lexsort((found, at_call))
            at_call, positions = at_call[order], where[found[order]].tolist()
            bounds = (np.flatnonzero(np.diff(at_call)) + 1).tolist()
            starts, ends = [0, *bounds], [*bounds, len(positions)]
            fresh.extend(
                (t, tuple(positions[a:b]))
                for t, a, b in zip((t0 + at_call[starts]).tolist(), starts, ends, strict=True)
            )
        # what the piece's last call masks, for the next piece to compare with
        masked = ((windowed & (index < last[-1])) | removed)[: m[-1]]
        before = set(where[: m[-1]][masked].tolist())
    return orig, stub, fresh


__all__ = ["Piece", "last_n_counts", "masked_after", "window_mask_counts", "with_masks"]
