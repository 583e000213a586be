"""Count-only forms of policies: a replay's per-call counts and events without its requests.

A slider move needs only what the chart draws: each call's tokens by kind and the events. A
full replay also makes every call's request (the parts the prompt-cache simulation reads) and
a `Call` per model call, step by step. A policy may give just the counts with a
`counts_only(trace, summarizer)` method returning `CallCounts` (or None where it cannot: a
subclass that changed its stages, a trace the formula does not cover). Four kinds exist: by
the rule a request-only stage is written as (`_engine_rules`: masking, recency; the engine
derives the stage's requests and these counts from the one rule), by hand-written formula
for decisions that follow from per-message facts (`clear_counts`, `offload_counts`,
`edit_counts`, and `masking_counts.masked_after` for masking behind a summary), by jumping,
for stages that act at a threshold (`threshold_counts`), and by remembering, for request-only
stages that act only over one (`acts_over_counts`); all but the formulas are
`StagePolicy.counts_only`'s default, chosen by what a stage is or declares.
`ctxlab._replay.replay.counted` turns the counts into the frame `Replay.counts` gives; the
explorer draws it first and makes the full replay after the chart is sent. Each form is
checked against the full engine, frame for frame and event for event
(tests/test_fast_paths.py, tests/test_counts_only.py). This module holds what the forms share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple, TypeVar

import numpy as np

from ctxlab._cost import tokens as tk
from ctxlab._messages import KINDS
from ctxlab._replay.policies._engine_facts import TraceFacts, facts, turn_table

if TYPE_CHECKING:
    from ctxlab._replay.policies.base import Event
    from ctxlab._replay.policies.engine import StagePolicy
    from ctxlab._trace import Trace

S = TypeVar("S")


class CallCounts(NamedTuple):
    """What a count-only form gives, one entry per model call, in call order: the messages in
    the request, its tokens (tool schemas included), its tokens by kind (`KINDS`, every kind
    present), the same counter on the uncompacted history, and the events of the call; then
    the events no call saw (`Replay.extra_events`: offloads after the last call)."""

    messages: np.ndarray
    context_tokens: np.ndarray
    by_kind: dict[str, np.ndarray]
    baseline_tokens: np.ndarray
    events: list[list[Event]]
    extra_events: Sequence[Event] = ()


def fed_lengths(trace: Trace) -> np.ndarray:
    """The history length the stage engine holds at each call (read-only): it feeds up to the
    call's position, and past its recorded output once the call is made (`StageRun.call`),
    never back; kept per trace (`turn_table`)."""
    return turn_table(trace).fed


def cumulative(values: Sequence[int] | np.ndarray) -> np.ndarray:
    """`[k]`: the sum of the first k values (k = 0..n): a total over any prefix is one read."""
    return np.concatenate(([0], np.cumsum(np.asarray(values, dtype=np.int64))))


def with_stubs(raw: CallCounts, orig: np.ndarray, stub: np.ndarray) -> CallCounts:
    """`raw` with tool results worth `orig` tokens at each call sent as stubs worth `stub`
    (masked, cleared or offloaded), events unchanged."""
    by_kind = dict(raw.by_kind)
    by_kind["tool_results"] = by_kind["tool_results"] - orig
    by_kind["stubs"] = by_kind["stubs"] + stub
    context = raw.context_tokens - orig + stub
    return raw._replace(context_tokens=context, by_kind=by_kind)


def kind_prefix(facts: TraceFacts) -> dict[str, np.ndarray]:
    """Per kind, the tokens of the history's first k messages of that kind-bucket
    (`[k]`, k = 0..n), computed once per trace and counter."""

    def make() -> dict[str, np.ndarray]:
        counts = np.asarray(facts.counts, dtype=np.int64)
        kinds = np.asarray(facts.kinds, dtype=object)
        return {k: cumulative(np.where(kinds == k, counts, 0)) for k in KINDS}

    return facts.kept("kind_prefix", make)


def history_prefix(facts: TraceFacts) -> np.ndarray:
    """The tokens of the history's first k messages (`[k]`, k = 0..n), computed once per
    trace and counter: with the tool schemas, a call's uncompacted count."""
    return facts.kept("history prefix", lambda: cumulative(facts.counts))


def raw_counts(facts: TraceFacts, fed: np.ndarray, tools_tokens: int) -> CallCounts:
    """The counts of an uncompacted request at each call (`fed` messages), no events: what a
    count-only form starts from and takes its edits out of."""
    prefix = kind_prefix(facts)
    by_kind = {k: prefix[k][fed] for k in KINDS}
    by_kind["tools"] = by_kind["tools"] + tools_tokens
    total = np.add.reduce([by_kind[k] for k in KINDS])
    return CallCounts(fed, total, by_kind, total.copy(), [[] for _ in fed])


def single_stage(
    policy: StagePolicy,
    trace: Trace,
    stage_type: type[S],
    form: Callable[[Trace, TraceFacts, S, int], CallCounts | None],
) -> CallCounts | None:
    """`form(trace, facts, stage, tool tokens)` when `policy` runs one stage of exactly
    `stage_type` on `trace` (made as a replay makes it, so a bad setting raises as it would
    there), else None: a subclass that changed its stages gets the full engine."""
    stages = policy.stages(trace, policy.window_for(trace))
    if len(stages) != 1 or type(stages[0]) is not stage_type:
        return None
    cpt = policy.counter_chars_per_token(trace)
    return form(trace, facts(trace, cpt), stages[0], tk.tool_schema_tokens(trace.tools, cpt))


__all__ = [
    "CallCounts",
    "cumulative",
    "fed_lengths",
    "history_prefix",
    "kind_prefix",
    "raw_counts",
    "single_stage",
    "with_stubs",
]
