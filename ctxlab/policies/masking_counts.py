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
    found = facts.built.get(name := f"masked-results {key!r}")
    if found is None:
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
        found = facts.built[name] = (
            np.asarray(pos, dtype=np.int64),
            np.asarray(toks, dtype=np.int64),
            np.asarray(stub_toks, dtype=np.int64),
            tuple(tags),
        )
    return found


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
    result; all but the first and the last `n` (polled) are masked, tagged ones as tags say."""
    pos, toks, stub_toks, tags = _results(facts, ("swe-mask",), _swe_placeholder, _masked)
    fed = fed_lengths(trace)
    raw = raw_counts(facts, fed, tools)
    first = next((i for i, k in enumerate(facts.kinds) if k == "human"), None)
    is_tool = np.ones(len(pos), dtype=bool)
    if first is not None:  # the first user message is an observation too (never masked)
        at = int(np.searchsorted(pos, first))
        pos = np.insert(pos, at, first)
        toks, stub_toks = np.insert(toks, at, 0), np.insert(stub_toks, at, 0)
        is_tool = np.insert(is_tool, at, False)
        tags = (*tags[:at], frozenset(), *tags[at:])
    if any(tags):
        removed = is_tool & np.fromiter(
            (bool(t & stage.remove_tags) for t in tags), dtype=bool, count=len(tags)
        )
        kept = np.fromiter((bool(t & stage.keep_tags) for t in tags), dtype=bool, count=len(tags))
    else:
        removed = kept = np.zeros(len(tags), dtype=bool)
    by_window = is_tool & ~kept & ~removed
    if len(by_window):
        by_window[0] = False  # the first observation is never elided
    k = np.searchsorted(pos, fed)  # observations in the history at each call
    last = np.maximum(0, (k // stage.polling) * stage.polling - stage.n)
    orig = cumulative(by_window * toks)[last] + cumulative(removed * toks)[k]
    stub = cumulative(by_window * stub_toks)[last] + cumulative(removed * stub_toks)[k]
    # the results masked at a call and not before: those the window passed since the
    # previous call, and tagged ones that arrived since (positions in history order)
    changed = np.flatnonzero((np.diff(last, prepend=0) > 0) | (np.diff(k, prepend=0) > 0))
    windowed, tagged, at = by_window.tolist(), removed.tolist(), pos.tolist()
    fresh = []
    k_before = last_before = 0
    for t, hi, k_hi in zip(
        changed.tolist(), last[changed].tolist(), k[changed].tolist(), strict=True
    ):
        new = [at[j] for j in range(last_before, hi) if windowed[j]]
        if any(tagged[k_before:k_hi]):
            new = sorted({*new, *(at[j] for j in range(k_before, k_hi) if tagged[j])})
        last_before, k_before = hi, k_hi
        if new:
            fresh.append((t, tuple(new)))
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


def masked_after(
    facts: TraceFacts, stage: LastNStage, pieces: list[Piece], fed: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, tuple[int, ...]]]]:
    """`LastNStage` over inputs that are another stage's output, given call by call as
    `pieces` (in call order): per call, the tokens of the results it masks and of their
    stubs, and the calls that mask results not masked at the call before (those positions,
    in input order)."""
    pos, toks, stub_toks, tags = _results(facts, ("swe-mask",), _swe_placeholder, _masked)
    # per history tool result, then one more entry (index -1) for the first user message,
    # an observation that is never masked
    toks, stub_toks = np.append(toks, 0), np.append(stub_toks, 0)
    removed_all = np.fromiter((bool(t & stage.remove_tags) for t in (*tags, frozenset())), bool)
    kept_all = np.fromiter((bool(t & stage.keep_tags) for t in (*tags, frozenset())), bool)
    windowed_all = ~kept_all & ~removed_all
    windowed_all[-1] = False
    index_of = {p: i for i, p in enumerate(pos.tolist())}
    humans = [i for i, k in enumerate(facts.kinds) if k == "human"]
    calls = len(fed)
    orig, stub = np.zeros(calls, dtype=np.int64), np.zeros(calls, dtype=np.int64)
    fresh: list[tuple[int, tuple[int, ...]]] = []
    before: set[int] = set()  # positions masked at the previous call
    for t0, t1, items, cut in pieces:
        # the input's observations in order, (position, index): the items', then the
        # history's from `cut` on (the first user message among them if the items had none)
        seq: list[tuple[int, int]] = []
        for it in items:
            if it.kind == "human" and not any(i == -1 for _, i in seq):
                seq.append((it.pos, -1))  # type: ignore[arg-type]
            elif isinstance(it.msg, ToolMessage) and it.kind == "tool_results":
                seq.append((it.pos, index_of[it.pos]))  # type: ignore[index]
        own = len(seq)
        if cut >= 0:
            k = int(np.searchsorted(pos, cut))
            tail = [(int(p), k + j) for j, p in enumerate(pos[k:].tolist())]
            h = next((p for p in humans if p >= cut), None)
            if h is not None and all(i != -1 for _, i in seq):
                tail.insert(int(np.searchsorted(pos[k:], h)), (h, -1))
            seq += tail
        where = np.asarray([p for p, _ in seq], dtype=np.int64)
        idx = np.asarray([i for _, i in seq], dtype=np.int64)
        o, s_, removed = toks[idx], stub_toks[idx], removed_all[idx]
        windowed = windowed_all[idx]
        if len(windowed):
            windowed[0] = False  # the first observation is never elided
        span = np.arange(t0, t1)
        if cut >= 0:  # observations in the input at each call
            m = own + np.searchsorted(where[own:], fed[span])
        else:
            m = np.full(len(span), len(seq), dtype=np.int64)
        last = np.maximum(0, (m // stage.polling) * stage.polling - stage.n)
        orig[span] = cumulative(windowed * o)[last] + cumulative(removed * o)[m]
        stub[span] = cumulative(windowed * s_)[last] + cumulative(removed * s_)[m]
        at, win, rem = where.tolist(), windowed.tolist(), removed.tolist()
        lo = m_lo = 0
        for j, (t, hi, m_hi) in enumerate(
            zip(span.tolist(), last.tolist(), m.tolist(), strict=True)
        ):
            if j == 0:  # a new input: what it masks, against the call before
                now = [at[i] for i in range(m_hi) if (win[i] and i < hi) or rem[i]]
                new = [p for p in now if p not in before]
                before = set(now)
            else:  # the same input grown: what the window passed, and tagged arrivals
                picked = [i for i in range(lo, hi) if win[i]]
                picked += [i for i in range(m_lo, m_hi) if rem[i]]
                new = [at[i] for i in sorted(picked) if at[i] not in before]
                before.update(new)
            lo, m_lo = hi, m_hi
            if new:
                fresh.append((t, tuple(new)))
    return orig, stub, fresh


__all__ = ["Piece", "last_n_counts", "masked_after", "window_mask_counts", "with_masks"]
