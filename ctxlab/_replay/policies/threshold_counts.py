"""Count-only form of the stages that compact once the request reaches a threshold
(`ctxlab._replay.policies.counts_only`): Claude Code's auto-compact, Codex, Inspect's summary
and trim (tokens), OpenHands' rolling condensers (messages), JetBrains' summary every n turns
(turns).

Such a stage (a `RebuildStage` whose own class declares `JUMPS`) sends its view unchanged, and
changes nothing else, while the view counts under its `trigger_tokens` (or holds fewer messages than
its `trigger_messages`, or turns than its `trigger_turns`); the view is the prefix its last
compaction built plus every history message fed since. So between compactions a call's counts
are the prefix's plus two entries of the history's per-kind prefix sums, and the next call
that may act is found by a binary search for where the count reaches the threshold. The
stage itself runs only there (its view and running count catch up on the messages they did not
see, as they would call by call), with the summariser; the calls in between cost an array
slice. `ctxlab._replay.policies.engine.StageRun` remains the reference (tests/test_counts_only.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.messages import AIMessage

from ctxlab._messages import KINDS
from ctxlab._replay.policies._engine_facts import TraceFacts
from ctxlab._replay.policies.counts_only import (
    CallCounts,
    cumulative,
    fed_lengths,
    history_prefix,
    kind_prefix,
)
from ctxlab._replay.policies.engine import JUMPS, StagePolicy, StageRun, declares
from ctxlab._replay.policies.masking import LastNStage
from ctxlab._replay.policies.masking_counts import Piece, masked_after, with_masks

if TYPE_CHECKING:
    from ctxlab._replay.policies.base import Event
    from ctxlab._replay.policies.engine import Item
    from ctxlab._trace import Trace
    from ctxlab.summarizers import Summarizer


Run = tuple[int, dict[str, int], int, int]
"""A stretch of calls that send one prefix then the history from one position on: its first
call, the prefix's tokens by kind, its length, the position (`run_views`)."""


def turns_prefix(history: TraceFacts) -> np.ndarray:
    """`[k]`: the AIMessages among the history's first k messages (turn starts), kept per
    trace and counter."""
    return history.kept(
        "turns prefix", lambda: cumulative([isinstance(m, AIMessage) for m in history.messages])
    )


def run_views(
    runs: list[Run],
    fed: np.ndarray,
    by_kind_of: dict[str, np.ndarray],
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Messages and tokens by kind of the view at every call: its run's prefix, then the
    history from the run's cut to the call's fed length (the calls that compacted are
    written over afterwards)."""
    calls = len(fed)
    if not runs:
        return np.zeros(calls, dtype=np.int64), {k: np.zeros(calls, dtype=np.int64) for k in KINDS}
    first = np.asarray([r[0] for r in runs], dtype=np.int64)
    which = np.maximum(np.searchsorted(first, np.arange(calls), side="right") - 1, 0)
    cut = np.asarray([r[3] for r in runs], dtype=np.int64)[which]
    length = np.asarray([r[2] for r in runs], dtype=np.int64)[which]
    by_kind = {
        k: np.asarray([r[1][k] for r in runs], dtype=np.int64)[which]
        + by_kind_of[k][fed]
        - by_kind_of[k][cut]
        for k in KINDS
    }
    return length + fed - cut, by_kind


def stage_then_masking(
    policy: StagePolicy, trace: Trace, first: Callable[[Any], bool]
) -> tuple[Any, LastNStage | None, int | None] | None:
    """(stage, the `LastNStage` after it or None, the window) when `policy` runs, on
    `trace`, one stage that `first` accepts, alone or followed by observation masking (made
    as a replay makes them, so a refused setting raises as it would there); else None."""
    if type(policy).start is not StagePolicy.start:
        return None  # a run of its own making: its calls are not the stage engine's
    window = policy.window_for(trace)
    stages = policy.stages(trace, window)
    if not stages or not first(stages[0]):
        return None
    masking = stages[1] if len(stages) == 2 and type(stages[1]) is LastNStage else None
    if len(stages) != 1 + (masking is not None):
        return None
    return stages[0], masking, window


def threshold_counts(
    policy: StagePolicy, trace: Trace, summarizer: Summarizer
) -> CallCounts | None:
    """`policy`'s counts and events on `trace` when it runs one stage that `jumps`, alone or
    followed by observation masking (`LastNStage`, by formula on its output), else None."""
    found = stage_then_masking(policy, trace, lambda s: declares(s, JUMPS))
    if found is None:
        return None
    stage, masking, window = found
    cpt = policy.counter_chars_per_token(trace)
    run = StageRun(trace, summarizer, [stage], window=window, chars_per_token=cpt)
    mode = next(
        (m for m in ("trigger_messages", "trigger_turns") if hasattr(stage, m)), "trigger_tokens"
    )
    threshold = int(getattr(stage, mode))
    history, tools, tok = run.facts, run.tools_tokens, run.tok
    fed = fed_lengths(trace)
    turns_before = turns_prefix(history) if mode == "trigger_turns" else None
    calls = len(fed)
    every = history_prefix(history)
    events: list[list[Event]] = [[] for _ in range(calls)]
    # the view now: `prefix` (its tokens by kind, length) then the history from `cut` on
    prefix: dict[str, int] = dict.fromkeys(KINDS, 0)
    prefix_len = cut = prefix_turns = 0
    built: list[Item] = []  # the prefix's items
    pieces: list[Piece] = []  # each call's input, for the masking after the stage
    # the calls that send the view, in runs that share one prefix (each run's first call,
    # prefix and cut), and the calls that compacted (what they sent)
    runs: list[Run] = []
    compacted: list[tuple[int, dict[str, int], int]] = []
    t = 0
    while t < calls:
        # the first call from t whose view reaches the threshold: the history length that
        # gets there, by the view's messages, turns or (binary search) tokens
        if mode == "trigger_messages":
            reach = threshold - prefix_len + cut
        elif turns_before is not None:
            need = threshold - prefix_turns + int(turns_before[cut])
            reach = int(np.searchsorted(turns_before, need))
        else:
            need = threshold - tools - sum(prefix.values()) + int(every[cut])
            reach = int(np.searchsorted(every, need))
        t_act = t + int(np.searchsorted(fed[t:], max(reach, cut)))
        if t_act > t:
            runs.append((t, prefix, prefix_len, cut))
            pieces.append((t, min(t_act, calls), built, cut))
        if t_act >= calls:
            break
        out, acted = run.apply_stages(trace.turns[t_act], int(fed[t_act]))
        events[t_act] = acted
        if acted:  # compacted: this call sends `out`; later views start with the prefix
            sent = tok.by_kind(out, KINDS)
            compacted.append((t_act, sent, len(out)))
            if masking is not None:  # as sent now: a later view may grow a list in place
                pieces.append((t_act, t_act + 1, list(out), -1))
            built = stage.prefix()  # type: ignore[attr-defined]
            same = len(built) == len(out) and all(a is b for a, b in zip(built, out, strict=True))
            prefix, prefix_len = (sent if same else tok.by_kind(built, KINDS)), len(built)
            if turns_before is not None:
                prefix_turns = stage.turns_in(built)  # type: ignore[attr-defined]
            # the view grows by what is fed after this call (`RebuildStage.view`)
            cut = int(fed[t_act])
        else:  # over the threshold, nothing to compact: the view
            pieces.append((t_act, t_act + 1, built, cut))
            if not runs or runs[-1][1] is not prefix or runs[-1][3] != cut:
                runs.append((t_act, prefix, prefix_len, cut))
        t = t_act + 1
    return counts_of_runs(trace, history, tools, runs, compacted, events, masking, pieces)


def counts_of_runs(
    trace: Trace,
    history: TraceFacts,
    tools: int,
    runs: list[Run],
    compacted: list[tuple[int, dict[str, int], int]],
    events: list[list[Event]],
    masking: LastNStage | None,
    pieces: list[Piece],
) -> CallCounts:
    """The counts of a stage that compacts now and then: each call's view from its stretch
    (`runs`), the calls that compacted written over with what they sent (call, tokens by kind,
    length), then the masking after the stage, if any, by formula on each call's input
    (`pieces`)."""
    fed = fed_lengths(trace)
    messages, by_kind = run_views(runs, fed, kind_prefix(history))
    for t_act, sent, length in compacted:
        for k, v in sent.items():
            by_kind[k][t_act] = v
        messages[t_act] = length
    by_kind["tools"] += tools
    context = np.add.reduce([by_kind[k] for k in KINDS])
    counts = CallCounts(messages, context, by_kind, tools + history_prefix(history)[fed], events)
    if masking is None:
        return counts
    orig, stub, fresh = masked_after(history, masking, pieces, fed)
    return with_masks(trace, counts, orig, stub, fresh, f"last_n_observations n={masking.n}")


__all__ = [
    "Run",
    "counts_of_runs",
    "run_views",
    "stage_then_masking",
    "threshold_counts",
    "turns_prefix",
]
