"""Count-only form of the stages that compact once the request reaches a threshold
(`ctxlab.policies.counts_only`): Claude Code's auto-compact, Codex, Inspect's summary and trim
(tokens), OpenHands' rolling condensers (messages).

Such a stage (a `RebuildStage` that says `jumps = True`) sends its view unchanged, and changes
nothing else, while the view counts under its `trigger_tokens` (or holds fewer messages than
its `trigger_messages`); the view is the prefix its last compaction built plus every history
message fed since. So between compactions a call's counts are the prefix's plus two entries of
the history's per-kind prefix sums, and the next call that may act is found by a binary
search for where the count reaches the threshold. The
stage itself runs only there (its view and running count catch up on the messages they did not
see, as they would call by call), with the summariser; the calls in between cost an array
slice. `ctxlab.policies.engine.StageRun` remains the reference (tests/test_counts_only.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ctxlab.message_facts import KINDS
from ctxlab.policies.counts_only import CallCounts, fed_lengths, kind_prefix
from ctxlab.policies.engine import StagePolicy, StageRun

if TYPE_CHECKING:
    from ctxlab.policies.base import Event
    from ctxlab.summarizers import Summarizer
    from ctxlab.trace import Trace


def threshold_counts(
    policy: StagePolicy, trace: Trace, summarizer: Summarizer
) -> CallCounts | None:
    """`policy`'s counts and events on `trace` when it runs one stage that `jumps`, else None."""
    if type(policy).start is not StagePolicy.start:
        return None  # a run of its own making: its calls are not the stage engine's
    window = policy.window_for(trace)
    stages = policy.stages(trace, window)
    if len(stages) != 1 or not getattr(type(stages[0]), "jumps", False):
        return None
    stage = stages[0]
    cpt = policy.counter_chars_per_token(trace)
    run = StageRun(trace, summarizer, stages, window=window, chars_per_token=cpt)
    by_messages = getattr(stage, "trigger_messages", None)
    threshold = int(by_messages if by_messages is not None else stage.trigger_tokens)
    history, tools, tok = run.facts, run.tools_tokens, run.tok
    fed = fed_lengths(trace)
    calls = len(fed)
    every = np.concatenate(([0], np.cumsum(history.counts, dtype=np.int64)))
    by_kind_of = kind_prefix(history)
    messages = np.zeros(calls, dtype=np.int64)
    by_kind = {k: np.zeros(calls, dtype=np.int64) for k in KINDS}
    events: list[list[Event]] = [[] for _ in range(calls)]
    # the view now: `prefix` (its tokens by kind, length) then the history from `cut` on
    prefix: dict[str, int] = dict.fromkeys(KINDS, 0)
    prefix_len = cut = 0
    t = 0
    while t < calls:
        # the first call from t whose view reaches the threshold: the history length that
        # gets there, by the view's messages or (binary search) tokens
        if by_messages is not None:
            reach = threshold - prefix_len + cut
        else:
            need = threshold - tools - sum(prefix.values()) + int(every[cut])
            reach = int(np.searchsorted(every, need))
        t_act = t + int(np.searchsorted(fed[t:], max(reach, cut)))
        span = slice(t, t_act)
        for k in KINDS:
            by_kind[k][span] = prefix[k] + by_kind_of[k][fed[span]] - by_kind_of[k][cut]
        messages[span] = prefix_len + fed[span] - cut
        if t_act >= calls:
            break
        turns = trace.turns[t_act]
        out, acted = run.apply_stages(turns, int(fed[t_act]))
        events[t_act] = acted
        if acted:  # compacted: the request is the new prefix, counted once
            prefix = dict.fromkeys(KINDS, 0)
            for it in out:
                prefix[it.kind] += tok(it.msg)
            # the view grows by what is fed after this call (`RebuildStage.view`)
            prefix_len, cut = len(out), int(fed[t_act])
            for k in KINDS:
                by_kind[k][t_act] = prefix[k]
            messages[t_act] = prefix_len
        else:  # over the threshold, nothing to compact: the view, as between compactions
            n = int(fed[t_act])
            for k in KINDS:
                by_kind[k][t_act] = prefix[k] + by_kind_of[k][n] - by_kind_of[k][cut]
            messages[t_act] = prefix_len + n - cut
        t = t_act + 1
    by_kind["tools"] += tools
    context = np.add.reduce([by_kind[k] for k in KINDS])
    return CallCounts(messages, context, by_kind, tools + every[fed], events)


__all__ = ["threshold_counts"]
