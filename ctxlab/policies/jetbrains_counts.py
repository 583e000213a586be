"""Count-only form of JetBrains' summary every n turns (`EveryNTurnsStage`), alone or followed
by observation masking (jetbrains-hybrid), for `ctxlab.policies.counts_only`.

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
from langchain_core.messages import AIMessage, HumanMessage

from ctxlab.message_facts import KINDS
from ctxlab.policies.base import make_event
from ctxlab.policies.counts_only import CallCounts, fed_lengths, history_prefix, kind_prefix
from ctxlab.policies.engine import StagePolicy, StageRun
from ctxlab.policies.jetbrains import (
    JETBRAINS_SUMMARY_PROMPT,
    EveryNTurnsStage,
    _head_end,
    checkpoint_item,
)
from ctxlab.policies.masking import LastNStage
from ctxlab.policies.masking_counts import Piece, masked_after, with_masks
from ctxlab.policies.threshold_counts import run_views, turns_prefix

if TYPE_CHECKING:
    from ctxlab.policies.base import Event
    from ctxlab.policies.engine import Item
    from ctxlab.summarizers import Summarizer
    from ctxlab.trace import Trace


def _assistants(history: StageRun) -> np.ndarray:
    """Positions of the history's assistant messages (the stage's turn starts), kept per
    trace and counter."""
    facts = history.facts
    return facts.kept(
        "assistant positions",
        lambda: np.asarray(
            [i for i, m in enumerate(facts.messages) if isinstance(m, AIMessage)], dtype=np.int64
        ),
    )


def jetbrains_counts(
    policy: StagePolicy, trace: Trace, summarizer: Summarizer
) -> CallCounts | None:
    """`policy`'s counts and events on `trace` when it runs one `EveryNTurnsStage`, alone or
    followed by `LastNStage` (by formula on its output), else None."""
    if type(policy).start is not StagePolicy.start:
        return None  # a run of its own making: its calls are not the stage engine's
    stages = policy.stages(trace, policy.window_for(trace))
    if not stages or type(stages[0]) is not EveryNTurnsStage:
        return None
    masking = stages[1] if len(stages) == 2 and type(stages[1]) is LastNStage else None
    if len(stages) != 1 + (masking is not None):
        return None
    stage: EveryNTurnsStage = stages[0]  # type: ignore[assignment]
    n, m, static = stage.n, stage.m, stage.static
    run = StageRun(
        trace, summarizer, [], window=None, chars_per_token=policy.counter_chars_per_token(trace)
    )
    history, tools, tok, items = run.facts, run.tools_tokens, run.tok, run.items
    fed = fed_lengths(trace)
    calls = len(fed)
    every = history_prefix(history)
    by_kind_of = kind_prefix(history)
    turns_before = turns_prefix(history)
    assistants = _assistants(run)
    first_head = _head_end(items)  # type: ignore[arg-type]  # the head the first summary finds
    events: list[list[Event]] = [[] for _ in range(calls)]
    # the request now: `head` (its tokens by kind), then the history from `p` on (before the
    # first summary: the history itself)
    head: list[Item] = []
    head_kinds: dict[str, int] = dict.fromkeys(KINDS, 0)
    p = 0
    runs: list[tuple[int, dict[str, int], int, int]] = []  # (first call, head, its length, p)
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
        if checkpoints:
            context = f"<PREVIOUS_CHECKPOINT>\n{checkpoints[-1].msg.text}\n</PREVIOUS_CHECKPOINT>\n"
        else:
            task = next((it.msg.text for it in head if it.kind == "human"), "")
            context = f"<PROBLEM_STATEMENT>\n{task}\n</PROBLEM_STATEMENT>\n"
        chunk = [HumanMessage(context), *history.messages[p:q]]
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
    messages, by_kind = run_views(runs, fed, by_kind_of)
    for t_act, sent_kinds, length in compacted:
        for k, v in sent_kinds.items():
            by_kind[k][t_act] = v
        messages[t_act] = length
    by_kind["tools"] += tools
    context_tokens = np.add.reduce([by_kind[k] for k in KINDS])
    counts = CallCounts(messages, context_tokens, by_kind, tools + every[fed], events)
    if masking is None:
        return counts
    orig, stub, fresh = masked_after(history, masking, pieces, fed)
    return with_masks(trace, counts, orig, stub, fresh, f"last_n_observations n={masking.n}")


__all__ = ["jetbrains_counts"]
