"""Count-only form of JetBrains' summary every n turns (`EveryNTurnsStage`), alone or followed
by observation masking (jetbrains-hybrid), for `ctxlab._replay.policies.counts_only`.

The stage keeps a head (the system messages, the first user message when it leads, every
checkpoint so far) and sends it followed by the history from a position `p` on. It summarises
when that history holds `n + keep_last_m_turns` assistant messages: the history from `p` to
the n-th of them goes to the summariser, the rest is kept, and a checkpoint joins the head.
So between summaries a call's counts are the head's plus two entries of the history's prefix
sums, the calls that summarise are found by a search over the history's assistant messages,
and at each only the summariser runs: the request it sends, the event's positions and token
counts are slices and sums of arrays. The generic form (`threshold_counts`) runs the stage
itself there, catching its view up message by message, which cost as much as the summaries.
`EveryNTurnsStage` remains the reference (tests/test_counts_only.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from langchain_core.messages import HumanMessage

from ctxlab._cost import tokens as tk
from ctxlab._messages import KINDS
from ctxlab._replay.policies._engine_counts import TokenCache
from ctxlab._replay.policies._engine_facts import facts
from ctxlab._replay.policies.base import make_event
from ctxlab._replay.policies.counts_only import CallCounts, fed_lengths, history_prefix, kind_prefix
from ctxlab._replay.policies.engine import history_items
from ctxlab._replay.policies.jetbrains import (
    JETBRAINS_SUMMARY_PROMPT,
    EveryNTurnsStage,
    checkpoint_item,
    head_length,
    summary_context,
)
from ctxlab._replay.policies.masking_counts import Piece
from ctxlab._replay.policies.threshold_counts import (
    Run,
    counts_of_runs,
    stage_then_masking,
    turns_prefix,
)

if TYPE_CHECKING:
    from ctxlab._replay.policies.base import Event
    from ctxlab._replay.policies.engine import Item, StagePolicy
    from ctxlab._trace import Trace
    from ctxlab.summarizers import Summarizer


def jetbrains_counts(
    policy: StagePolicy, trace: Trace, summarizer: Summarizer
) -> CallCounts | None:
    """`policy`'s counts and events on `trace` when it runs one `EveryNTurnsStage`, alone or
    followed by `LastNStage` (by formula on its output), else None."""
    chosen = stage_then_masking(policy, trace, lambda s: type(s) is EveryNTurnsStage)
    if chosen is None:
        return None
    stage, masking, _ = chosen
    n, m, static = stage.n, stage.m, stage.static
    # the history's facts, items and token counts, as a run of the stage would have them
    cpt = policy.counter_chars_per_token(trace)
    history = facts(trace, cpt)
    tok, items = TokenCache(cpt, history.tokens), history_items(history)
    tools = tk.tool_schema_tokens(trace.tools, cpt)
    fed = fed_lengths(trace)
    calls = len(fed)
    every = history_prefix(history)
    by_kind_of = kind_prefix(history)
    turns_before = turns_prefix(history)
    assistants = np.flatnonzero(np.diff(turns_before))  # the turn starts' positions
    first_head = head_length(items)  # the head the first summary finds
    events: list[list[Event]] = [[] for _ in range(calls)]
    # the request now: `head` (its tokens by kind), then the history from `p` on (before the
    # first summary: the history itself)
    head: list[Item] = []
    head_kinds: dict[str, int] = dict.fromkeys(KINDS, 0)
    p = 0
    runs: list[Run] = []  # (first call, head by kind, its length, p)
    pieces: list[Piece] = []  # each call's input, for the masking after the stage
    compacted: list[tuple[int, dict[str, int], int]] = []  # (call, what it sent by kind, length)
    t = 0
    while t < calls:
        # the first call from t whose request holds n + m assistant messages after its head
        reach = int(np.searchsorted(turns_before, n + m + int(turns_before[p])))
        t_act = t + int(np.searchsorted(fed[t:], max(reach, p)))
        if t_act > t:
            runs.append((t, head_kinds, len(head), p))
            pieces.append((t, min(t_act, calls), head, p))
        if t_act >= calls:
            break
        at = int(fed[t_act])
        if not head:  # the first summary: the history's own head
            head, p = list(items[:first_head]), first_head
            head_kinds = tok.by_kind(head, KINDS)
        # the turns after the head: the summary takes the first n, the rest are kept
        first = int(np.searchsorted(assistants, p))
        found = int(turns_before[at]) - int(turns_before[p])
        q = int(assistants[first + n]) if n < found else at
        checkpoints = [it for it in head if it.kind == "summary"]
        chunk = [HumanMessage(summary_context(head)), *history.messages[p:q]]
        text = summarizer.summarize(chunk, prompt=JETBRAINS_SUMMARY_PROMPT)
        checkpoint = checkpoint_item(n, text)
        written = tok(checkpoint.msg)
        # what this call sends: the head (static: without its checkpoints), the new checkpoint
        # and the kept turns; the positions that left it and its counts before and after
        sent_head = [it for it in head if it.kind != "summary"] if static else head
        dropped = [it.pos for it in checkpoints if it.pos is not None] if static else []
        gone = (*sorted(dropped), *range(p, q))
        sent = {k: v + by_kind_of[k][at] - by_kind_of[k][q] for k, v in head_kinds.items()}
        if static:
            for it in checkpoints:
                sent[it.kind] -= tok(it.msg)
        sent["summary"] += written
        before = tools + sum(head_kinds.values()) + int(every[at]) - int(every[p])
        reason = f"{found} turns >= n+m"
        after = tools + sum(sent.values())
        index = trace.turns[t_act].index
        events[t_act] = [make_event("summarize", index, gone, before, after, None, reason, text)]
        compacted.append((t_act, sent, len(sent_head) + 1 + at - q))
        if masking is not None:
            pieces.append((t_act, t_act + 1, [*sent_head, checkpoint, *items[q:at]], -1))
        # later requests: the head with the checkpoint, then the history from q on
        head = [*head, checkpoint]
        head_kinds = dict(head_kinds)
        head_kinds["summary"] += written
        p = q
        t = t_act + 1
    return counts_of_runs(trace, history, tools, runs, compacted, events, masking, pieces)


__all__ = ["jetbrains_counts"]
