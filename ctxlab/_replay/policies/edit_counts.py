"""Count-only form of Inspect's `CompactionEdit` stage (`ctxlab._replay.policies.counts_only`).

With `keep_tool_inputs=True` and no `exclude_tools` (the defaults) the edit only ever replaces
messages by their edited copies, and both of its edits reach a prefix of their kind: once the
request reaches `threshold`, every tool result but the last `keep_tool_uses` is cleared and
every assistant message but the last `keep_thinking_turns` loses its thinking blocks. What it
edited stays edited (later requests continue from the compacted one), so at any call the
request is the history with its first `u` results cleared and its first `v` assistant
messages stripped: its counts are the uncompacted ones less two prefix sums. The stage acts
at most calls once the request first gets there, which is why the full engine, which copies
and compares the request's tail at each of them, was the slowest preset to move. Here a call
costs a few integer reads. `EditStage` remains the reference (tests/test_counts_only.py);
other settings get it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from langchain_core.messages import AIMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._replay.policies.base import make_event
from ctxlab._replay.policies.counts_only import CallCounts, cumulative, fed_lengths, raw_counts
from ctxlab._replay.policies.engine import replaced
from ctxlab._replay.policies.inspect import (
    TOOL_RESULT_PLACEHOLDER,
    EditStage,
    _cleared,
    _no_thinking,
    has_thinking,
)

if TYPE_CHECKING:
    from ctxlab._replay.policies._engine_facts import TraceFacts
    from ctxlab._trace import Trace


class _Editable(NamedTuple):
    """The history's messages the edit may change, in order, one kind per table."""

    at: list[int]
    """Their positions."""
    changes: list[bool]
    """Whether the edit changes each (a thinking block to strip; every result clears)."""
    lost: dict[str, np.ndarray]
    """Per token bucket, `[k]`: the tokens the first k of them take out of it when edited."""
    gained: np.ndarray
    """`[k]`: the tokens their first k edited copies add to the copies' bucket."""


def _editable(history: TraceFacts, results: bool) -> _Editable:
    """The tool results (`results`) or the assistant messages of the history, with what
    editing each costs and saves by the run's counter, kept per trace and counter."""
    return history.kept(("inspect-edit", results), lambda: _find_editable(history, results=results))


def _find_editable(history: TraceFacts, *, results: bool) -> _Editable:
    cpt = history.chars_per_token
    at: list[int] = []
    changes: list[bool] = []
    lost: dict[str, list[int]] = {}
    gained: list[int] = []
    for i, (message, kind, count) in enumerate(
        zip(history.messages, history.kinds, history.counts, strict=True)
    ):
        if results:
            if not (isinstance(message, ToolMessage) and kind == "tool_results"):
                continue
            edit = replaced(
                message,
                ("inspect-clear",),
                lambda m=message: _cleared(m, TOOL_RESULT_PLACEHOLDER),
            )
        elif isinstance(message, AIMessage):
            edit = (
                replaced(message, ("no-thinking",), lambda m=message: _no_thinking(m))
                if has_thinking(message)
                else None
            )
        else:
            continue
        at.append(i)
        changes.append(edit is not None)
        for k in lost:
            lost[k].append(0)
        if edit is not None:
            lost.setdefault(kind, [0] * len(at))[-1] = count
        gained.append(tk.message_tokens(edit, cpt) if edit is not None else 0)
    return _Editable(at, changes, {k: cumulative(v) for k, v in lost.items()}, cumulative(gained))


def edit_counts(
    trace: Trace, history: TraceFacts, stage: EditStage, tools: int
) -> CallCounts | None:
    """`EditStage` over `trace` with `keep_tool_inputs=True`, no excluded tools and
    non-negative keeps; None otherwise, which the full engine replays."""
    keep_thinking = stage.keep_thinking
    if stage.exclude or not stage.keep_inputs or stage.keep_tool_uses < 0:
        return None
    if keep_thinking != "all" and int(keep_thinking) < 0:
        return None
    fed = fed_lengths(trace)
    raw = raw_counts(history, fed, tools)
    results = _editable(history, results=True)
    ais = None if keep_thinking == "all" else _editable(history, results=False)
    # at each call: the results and assistant messages in its request, and how many of each
    # the request has edited (`u`, `v`: a prefix of each, never shrinking)
    n_results = np.searchsorted(results.at, fed).tolist()
    n_ais = np.searchsorted(ais.at, fed).tolist() if ais is not None else None
    keep_ai = 0 if keep_thinking == "all" else int(keep_thinking)
    keep_results, threshold = stage.keep_tool_uses, stage.threshold
    total = raw.context_tokens.tolist()
    r_lost = results.lost.get("tool_results")
    r_saved = (r_lost - results.gained).tolist() if r_lost is not None else None
    a_saved = (
        (sum(ais.lost.values()) - ais.gained).tolist() if ais is not None and ais.lost else None
    )
    turns, events = trace.turns, raw.events
    u = v = saved = 0
    us: list[int] = []
    vs: list[int] = []
    sent: list[int] = []
    for t, count in enumerate(total):
        count -= saved
        added = stage.added(turns[t].index)
        if stage.over(count, turns[t].index):
            stage.last_over = turns[t].index
            reason = f"> {threshold} tokens as Inspect counts ({count + added:,})"
            new_u = max(u, n_results[t] - keep_results)
            new_v = v if n_ais is None else max(v, n_ais[t] - keep_ai)
            gone = results.at[u:new_u]
            if ais is not None and new_v > v:
                gone += [p for p, c in zip(ais.at[v:new_v], ais.changes[v:new_v], strict=True) if c]
            if gone:
                after = count
                if r_saved is not None:
                    after -= r_saved[new_u] - r_saved[u]
                if a_saved is not None:
                    after -= a_saved[new_v] - a_saved[v]
                events[t].append(
                    make_event(
                        "clear_tool_uses",
                        turns[t].index,
                        tuple(sorted(gone)),
                        count,
                        after,
                        None,
                        reason,
                    )
                )
                saved += count - after
                count = after
            u, v = new_u, new_v
        us.append(u)
        vs.append(v)
        sent.append(count)
    by_kind = dict(raw.by_kind)
    u_at = np.asarray(us, dtype=np.int64)
    for k, lost in results.lost.items():
        by_kind[k] = by_kind[k] - lost[u_at]
    by_kind["stubs"] = by_kind["stubs"] + results.gained[u_at]
    if ais is not None:
        v_at = np.asarray(vs, dtype=np.int64)
        for k, lost in ais.lost.items():
            by_kind[k] = by_kind[k] - lost[v_at]
        by_kind["ai"] = by_kind["ai"] + ais.gained[v_at]
    context = np.asarray(sent, dtype=np.int64)
    return raw._replace(context_tokens=context, by_kind=by_kind)


__all__ = ["edit_counts"]
