"""Observation masking (`LastNStage`) behind a stage that compacts now and then: its counts
over inputs that are another stage's output, given call by call as pieces (`masked_after`),
for the count-only forms of such pipelines (`threshold_counts`, JetBrains' hybrid in
`jetbrains_counts`). On the history alone the stage's form is the one the engine derives from
its rule (`ctxlab._replay.policies._engine_rules`); here the horizon is that rule's
(`LastNStage.bounds`), laid over each piece's observations: once a result falls out of the
kept ones it stays masked within a piece, so a call's counts are the piece's less what the
masked results no longer cost, and a call's event lists the results that crossed the line
since the previous call (tests/test_counts_only.py, tests/test_fast_paths.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.messages import ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._replay.policies._engine_facts import TraceFacts, turn_table
from ctxlab._replay.policies.base import make_event
from ctxlab._replay.policies.counts_only import (
    CallCounts,
    cumulative,
    with_stubs,
)
from ctxlab._replay.policies.masking import (
    LastNStage,
    _masked,
    _swe_placeholder,
    _tags,
)

if TYPE_CHECKING:
    from ctxlab._replay.policies.engine import Item
    from ctxlab._trace import Trace


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
    index = turn_table(trace).index.tolist()
    before, after = raw.context_tokens.tolist(), masked.context_tokens.tolist()
    events = masked.events
    for t, positions in fresh:
        events[t].append(
            make_event("mask_observations", index[t], positions, before[t], after[t], None, reason)
        )
    return masked


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
    in input order).

    The pieces' observations are laid end to end in one array, so the counts and the call
    that masks each observation are a few array operations over the whole replay, not forty
    per piece (a summary preset's replay has dozens of pieces of a few dozen observations)."""
    pos, toks, stub_toks, removed_all, windowed_all = _observations(facts, stage)
    calls = len(fed)
    orig, stub = np.zeros(calls, dtype=np.int64), np.zeros(calls, dtype=np.int64)
    live = [p for p in pieces if p[1] > p[0]]  # a piece no call reads masks nothing
    if not live:
        return orig, stub, []
    humans = _humans(facts)
    # each piece's input, its observations in order by position: the items', then the
    # history's from `cut` to the piece's last fed (the first user message from `cut` on
    # among them if the items had none)
    wheres: list[Any] = []
    own, tail_from, user, length = [], [], [], []  # per piece
    for _t0, t1, items, cut in live:
        where_l: list[int] = []
        has_user = False
        for it in items:
            kind = it.kind
            if kind == "tool_results":
                if isinstance(it.msg, ToolMessage):
                    where_l.append(it.pos)  # type: ignore[arg-type]
            elif kind == "human" and not has_user:
                where_l.append(it.pos)  # type: ignore[arg-type]
                has_user = True
        wheres.append(where_l)
        own.append(len(where_l))
        k = h = -1  # no tail; no user message added to it
        size = len(where_l)
        if cut >= 0:
            k = int(np.searchsorted(pos, cut))
            tail = pos[k : int(np.searchsorted(pos, fed[t1 - 1]))]
            first = int(np.searchsorted(humans, cut))
            if first < len(humans) and not has_user:
                h = int(humans[first])
                tail = np.insert(tail, int(np.searchsorted(tail, h)), h)
            wheres.append(tail)
            size += len(tail)
        tail_from.append(k)
        user.append(h)
        length.append(size)
    where = np.concatenate([np.asarray(w, dtype=np.int64) for w in wheres])
    # each observation's index in the history's results; -1: the first user message
    idx = np.searchsorted(pos, where)
    result = idx < len(pos)
    result[result] = pos[idx[result]] == where[result]
    idx[~result] = -1
    starts = cumulative(length)  # piece p's observations: where[starts[p]:starts[p + 1]]
    o, s_, removed, windowed = toks[idx], stub_toks[idx], removed_all[idx], windowed_all[idx]
    windowed[starts[:-1][np.asarray(length) > 0]] = False  # an input's first is never elided
    # every call a piece covers, with its piece's facts
    span = np.asarray([p[1] - p[0] for p in live], dtype=np.int64)
    call = np.concatenate([np.arange(p[0], p[1], dtype=np.int64) for p in live])
    of = np.repeat(np.arange(len(live)), span)
    base = starts[:-1][of]
    k_c, h_c = np.asarray(tail_from)[of], np.asarray(user)[of]
    at = fed[call]
    # observations in the input at each call: the items', then the tail's fed so far
    m = np.asarray(own, dtype=np.int64)[of] + np.where(
        k_c >= 0, np.searchsorted(pos, at) - k_c + ((h_c >= 0) & (h_c < at)), 0
    )
    last = stage.bounds(at, m)[1]  # the rule's horizon (`LastNStage.bounds`)
    for out, value in ((orig, o), (stub, s_)):
        by_window, by_tag = cumulative(windowed * value), cumulative(removed * value)
        out[call] = (by_window[base + last] - by_window[base]) + (by_tag[base + m] - by_tag[base])
    # the first call of its piece that masks each observation: the window passed it (`last`
    # beyond it) or it arrived tagged (`m` beyond it); both only grow within a piece, and
    # `base + last`, `base + m` over the whole replay. A search past the piece's calls finds
    # none that masks it: the window may leave an observation unmasked to the end, but every
    # tagged one is in by the last call (the tail stops at the last fed; a user message
    # beyond it is never tagged)
    everywhere = np.arange(len(where))
    never = len(call)
    piece_of = np.repeat(np.arange(len(live)), length)
    ends = np.cumsum(span)[piece_of]  # past each observation's piece's last call
    by_last = np.searchsorted(base + last, everywhere, "right")
    by_m = np.searchsorted(base + m, everywhere, "right")
    at_call = np.minimum(
        np.where(windowed & (by_last < ends), by_last, never),
        np.where(removed, by_m, never),
    )
    masked = np.flatnonzero(at_call < never)
    if not len(masked):  # none (no observation in any input, say: every call sent a summary)
        return orig, stub, []
    # a piece's first call lists only what the previous piece's last call did not mask
    # (keys: piece and position; a key one piece on is the same result masked the piece before)
    step = int(where.max()) + 1
    keys = piece_of[masked] * step + where[masked]
    passed_on = np.sort(keys + step)
    found = np.searchsorted(passed_on, keys)
    again = passed_on[np.minimum(found, len(passed_on) - 1)] == keys
    at_first = at_call[masked] == (ends - span[piece_of])[masked]
    masked = masked[~(at_first & again)]
    masked = masked[np.lexsort((masked, at_call[masked]))]  # by call, then in input order
    if not len(masked):
        return orig, stub, []
    when = at_call[masked]
    positions = where[masked].tolist()
    bounds = (np.flatnonzero(np.diff(when)) + 1).tolist()
    lo, hi = [0, *bounds], [*bounds, len(positions)]
    fresh = [
        (t, tuple(positions[a:b])) for t, a, b in zip(call[when[lo]].tolist(), lo, hi, strict=True)
    ]
    return orig, stub, fresh


__all__ = ["Piece", "masked_after", "with_masks"]
