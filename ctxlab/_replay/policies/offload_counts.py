"""Count-only form of the tool-result offload stage (`ctxlab._replay.policies.counts_only`).

A result is offloaded from its first appearance on when its text is over the limit and its
call's tool is not excluded: a fact of the result alone, as long as the trace never gives one
call id two tool names and every call comes before its result (else the stage re-decides
old results, and the full engine replays). So a call's counts are the uncompacted ones less
what the offloaded results no longer cost, and its events are the offloads it is the first
to see. `OffloadStage` remains the reference (tests/test_counts_only.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from langchain_core.messages import AIMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._messages import message_text
from ctxlab._replay.policies._engine_facts import TraceFacts
from ctxlab._replay.policies.base import make_event
from ctxlab._replay.policies.counts_only import (
    CallCounts,
    cumulative,
    fed_lengths,
    raw_counts,
    with_stubs,
)
from ctxlab._replay.policies.deepagents.filesystem import sanitize_tool_call_id, tool_stub
from ctxlab._replay.policies.offload import OffloadStage

if TYPE_CHECKING:
    from ctxlab._trace import Trace

_Offloads = tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]] | None


def _offloads(history: TraceFacts, stage: OffloadStage) -> _Offloads:
    """`_find_offloads`, kept per trace, counter, limit and exclusions."""
    key = f"offloads {stage.limit} {sorted(stage.excluded)!r}"
    return history.kept(key, lambda: _find_offloads(history, stage))


def _find_offloads(history: TraceFacts, stage: OffloadStage) -> _Offloads:
    """The results the stage offloads: positions, tokens, their stubs' tokens and paths;
    None when a call id is named twice or a result comes before its call."""
    calls = {
        c["id"]
        for m in history.messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c.get("id")
    }
    names: dict[str, str] = {}
    pos, toks, stub_toks, paths = [], [], [], []
    for i, (message, kind, count) in enumerate(
        zip(history.messages, history.kinds, history.counts, strict=True)
    ):
        if isinstance(message, AIMessage):
            for c in message.tool_calls:
                if c.get("id") and names.setdefault(c["id"], c["name"]) != c["name"]:
                    return None  # one id, two names: the stage re-decides earlier results
            continue
        if not isinstance(message, ToolMessage) or kind != "tool_results":
            continue
        if message.tool_call_id in calls and message.tool_call_id not in names:
            return None  # its call comes later and may rename it
        if (names.get(message.tool_call_id) or message.name) in stage.excluded:
            continue
        text = message_text(message)
        if len(text) <= stage.limit:
            continue
        path = f"/large_tool_results/{sanitize_tool_call_id(message.tool_call_id)}"
        stub = tk.derived(
            message, ("offload", path), lambda m=message, p=path, t=text: tool_stub(m, p, t)
        )
        pos.append(i)
        toks.append(count)
        stub_toks.append(tk.message_tokens(stub, history.chars_per_token))
        paths.append(path)
    return (
        np.asarray(pos, dtype=np.int64),
        np.asarray(toks, dtype=np.int64),
        np.asarray(stub_toks, dtype=np.int64),
        tuple(paths),
    )


def offload_counts(
    trace: Trace, history: TraceFacts, stage: OffloadStage, tools: int
) -> CallCounts | None:
    """`OffloadStage` over `trace`, or None where the formula does not hold (see above)."""
    found = _offloads(history, stage)
    if found is None:
        return None
    pos, toks, stub_toks, paths = found
    fed = fed_lengths(trace)
    raw = raw_counts(history, fed, tools)
    seen = np.searchsorted(pos, fed)  # offloaded results in the history at each call
    orig = cumulative(toks)[seen]
    stub = cumulative(stub_toks)[seen]
    edited = with_stubs(raw, orig, stub)
    events, turns, reason = edited.events, trace.turns, f"> {stage.limit} chars"
    at, before, after = pos.tolist(), toks.tolist(), stub_toks.tolist()
    previous = 0
    for t, upto in enumerate(seen.tolist()):
        for j in range(previous, upto):
            events[t].append(
                make_event(
                    "offload_tool_result",
                    turns[t].index,
                    (at[j],),
                    before[j],
                    after[j],
                    paths[j],
                    reason,
                )
            )
        previous = max(previous, upto)
    return edited


__all__ = ["offload_counts"]
