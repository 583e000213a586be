"""Deep Agents' count-only form (`DeepAgents.counts_only`): the run's per-call counts and
events, made by jumping over the calls where nothing can happen.

Between two of its decisions, a Deep Agents state only grows: the tool node appends the
recorded messages as the feed has them (`feed.py`), and the request is the latest summary plus
the state from the event's cutoff. Such a call's counts follow from prefix sums over the feed.
A call needs the real step (`DeepAgentsRun.call`, with no request built) when something may
happen at it:

* the feed reaches an oversized tool result (its offload stub and event are the run's);
* the state ends with a HumanMessage longer than the human-message limit;
* its request reaches a token or message limit of any trigger clause or of argument
  truncation (a clause needs all of its limits: reaching one of them is enough to look);
* its request is over the call's input budget (the tail clip, the overflow rollback).

Each of these is found by a binary search or over a slice of arrays, so a 1,000-turn replay
runs the real step at a few dozen calls (its summaries still run: their sizes are part of the
counts). Usage scaling re-reads every request, so a policy using it has no form. Checked
against the full replay, frame for frame and event for event
(tests/test_counts_only_deepagents.py).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from langchain_core.messages import BaseMessage, HumanMessage

from ctxlab._messages import message_text
from ctxlab._replay.policies._engine_facts import facts, turn_table
from ctxlab._replay.policies.counts_only import CallCounts, cumulative, history_prefix
from ctxlab._replay.policies.deepagents.run import DeepAgentsRun
from ctxlab._replay.policies.deepagents.state import STATE_KINDS
from ctxlab._weak_memo import WeakMemo

if TYPE_CHECKING:
    from ctxlab._replay.policies.base import Call, Event
    from ctxlab._replay.policies.deepagents.settings import Settings
    from ctxlab._trace import Trace
    from ctxlab.summarizers import Summarizer


ROWS = (*STATE_KINDS, "tools")
"""The kinds of a call's tokens (`KINDS`), in the order the form keeps them: the state's, then
the tool schemas."""
SUMMARY, SYSTEM = STATE_KINDS.index("summary"), STATE_KINDS.index("system")


def deepagents_counts(settings: Settings, trace: Trace, summarizer: Summarizer) -> CallCounts:
    """The counts and events `DeepAgentsRun(settings, trace, summarizer)` gives call by call,
    with the real step run only where something may happen (see the module docstring);
    `settings` must not use usage scaling."""
    run = DeepAgentsRun(settings, trace, summarizer, requests=False)
    turns = trace.turns
    n_calls = len(turns)
    t = _tables(run, trace)
    budgets = _budgets(run, t)
    token_limit, message_limit = _limits(run)
    stretches: list[_Stretch] = []
    stepped: list[tuple[int, Call]] = []
    k = 0
    while k < n_calls:
        window = _window(run)
        stop = _next_step(run, k, t, window, budgets, token_limit, message_limit)
        if stop > k:  # calls k..stop-1 only grow the state: counts from the prefix sums
            stretches.append(_stretch(run, k, stop, window))
            k = stop
            if k == n_calls:
                break
        stepped.append((k, run.call(turns[k])))
        k += 1
    return _counts(run, t, stretches, stepped, run.finish())


class _Stretch(NamedTuple):
    """Calls `first`..`stop - 1`, where the state only grows from `fed` messages: their
    request is the summary (if `summarized`) and the state from `start`, of `base + sums[n]`
    tokens at a state of n messages, `held` by kind (`STATE_KINDS`) before the growth."""

    first: int
    stop: int
    fed: int
    start: int
    summarized: bool
    base: int
    held: tuple[int, ...]


def _stretch(run: DeepAgentsRun, first: int, stop: int, held_now: tuple[int, int, int]) -> _Stretch:
    """Calls `first`..`stop - 1` from the run's state now (`held_now`: its `_window`)."""
    fed = len(run.view)
    start, summary, window = held_now
    held = [run.window_kinds[k] for k in STATE_KINDS]
    held[SUMMARY] += summary
    held[SYSTEM] += run.system_tokens
    base = run.fixed + summary + window
    return _Stretch(first, stop, fed, start, run.event is not None, base, tuple(held))


def _counts(
    run: DeepAgentsRun,
    t: _Tables,
    stretches: list[_Stretch],
    stepped: list[tuple[int, Call]],
    extra: list[Event],
) -> CallCounts:
    """The calls' counts: the stepped calls' as they came, the stretches' from the prefix
    sums, all stretches at once (`_record`'s counts with no truncation)."""
    n_calls = len(t.calls.lengths)
    context = np.zeros(n_calls, dtype=np.int64)
    messages = np.zeros(n_calls, dtype=np.int64)
    by_kind = np.zeros((len(ROWS), n_calls), dtype=np.int64)
    events: list[list[Event]] = [[] for _ in range(n_calls)]
    if stretches:
        first, stop, fed, start, summarized, base, held = (
            np.array(c) for c in zip(*stretches, strict=True)
        )
        size = stop - first
        which = np.repeat(np.arange(len(stretches)), size)  # each call's stretch
        # the calls in order: a running index, shifted to each stretch's first call
        calls = np.arange(len(which)) + np.repeat(first - (np.cumsum(size) - size), size)
        n = t.calls.lengths[calls]
        fed_at = fed[which]
        context[calls] = base[which] + t.sums[n] - t.sums[fed_at]
        messages[calls] = np.where(summarized[which], 1 + n - start[which], n)
        by_kind[: len(STATE_KINDS), calls] = (
            held.T[:, which] + t.kind_sums[:, n] - t.kind_sums[:, fed_at]
        )
    by_kind[-1] = run.settings.tools_tokens
    for k, call in stepped:
        context[k], messages[k], events[k] = call.context_tokens, call.messages, call.events
        by_kind[:, k] = [call.by_kind.get(kind, 0) for kind in ROWS]
    baseline = run.fixed + t.calls.history[t.calls.lengths]
    kinds = dict(zip(ROWS, by_kind, strict=True))
    return CallCounts(messages, context, kinds, baseline, events, extra)


class _Calls(NamedTuple):
    """What the form reads of a trace's calls, made once per trace, system-prompt offset and
    human-message limit: the state's length at each call (`lengths`, also as a list, `at`,
    for `bisect`: a search on a list costs what NumPy takes to start one), the calls whose
    state ends with a HumanMessage over the limit (`long_human`), the recorded output limits
    (`outputs`, distinct, None where a call has none) with each call's index into them
    (`output_of`), and the uncompacted history's prefix sums (the baseline)."""

    lengths: np.ndarray
    at: list[int]
    long_human: np.ndarray
    outputs: list[int | None]
    output_of: np.ndarray
    history: np.ndarray


class _Tables(NamedTuple):
    """`_Calls`, and what the form reads of one feed: the calls that need the real step
    whatever the state (`forced`, ascending), prefix sums over the feed's tokens (`sums`,
    also as a list, `total`) and by kind (`kind_sums`, one row per kind of `STATE_KINDS`)."""

    calls: _Calls
    forced: list[int]
    sums: np.ndarray
    total: list[int]
    kind_sums: np.ndarray


_KIND_ROW = {k: i for i, k in enumerate(STATE_KINDS)}


def _tables(run: DeepAgentsRun, trace: Trace) -> _Tables:
    """The tables of `run`'s trace and feed, kept with the trace's facts (`_engine_facts`)
    for the next run with the same feed."""
    feed = run.feed or run._open_feed()
    found = facts(trace, run.cpt)
    human_chars = run.settings.human_evict_chars
    calls = found.kept(
        ("deepagents-calls", run.offset, human_chars),
        lambda: _calls_of(
            trace, found.messages[run.offset :], history_prefix(found), run.offset, human_chars
        ),
    )
    kept: WeakMemo[_Tables] = found.kept("deepagents-counts", WeakMemo)
    known = kept.get(feed)  # per feed the trace keeps (`feed.KEPT_FEEDS`), leaving with it
    if known is not None and known.calls is calls:
        return known
    tokens = np.asarray(feed.tokens, dtype=np.int64)
    by_kind = np.zeros((len(STATE_KINDS), len(tokens)), dtype=np.int64)
    rows = np.fromiter((_KIND_ROW[k] for k in feed.kinds), dtype=np.intp, count=len(tokens))
    by_kind[rows, np.arange(len(tokens))] = tokens
    kind_sums = np.zeros((len(STATE_KINDS), len(tokens) + 1), dtype=np.int64)
    np.cumsum(by_kind, axis=1, out=kind_sums[:, 1:])
    sums = cumulative(tokens)
    offloads = np.fromiter((o[0] for o in feed.offloads), dtype=np.int64)
    forced = _feeds_offload(offloads, calls.lengths) | calls.long_human
    tables = _Tables(calls, np.flatnonzero(forced).tolist(), sums, sums.tolist(), kind_sums)
    return kept.put(feed, tables)


def _calls_of(
    trace: Trace,
    source: tuple[BaseMessage, ...],
    prefix: np.ndarray,
    offset: int,
    human_chars: int | None,
) -> _Calls:
    """`_Calls` of `trace`, whose history after the system prompt is `source` (the whole
    history's token prefix sums: `prefix`). The run feeds up to each call's position, never
    back."""
    at = turn_table(trace).position - offset
    lengths = np.minimum(np.maximum.accumulate(np.maximum(at, 0)), len(source)) if len(at) else at
    # by the state length it ends; an evicted (tagged) message is sent as a short stub, so
    # marking it too only ever adds a step
    ends_long = np.zeros(len(source) + 1, dtype=bool)
    if human_chars:
        for p, m in enumerate(source):
            if isinstance(m, HumanMessage) and len(message_text(m)) > human_chars:
                ends_long[p + 1] = True
    index: dict[int | None, int] = {}
    output_of = [index.setdefault(u.max_output_tokens, len(index)) for u in trace.turns]
    return _Calls(
        lengths,
        lengths.tolist(),
        ends_long[lengths],
        list(index),
        np.array(output_of, dtype=np.intp),
        prefix[offset:] - prefix[offset],
    )


def _feeds_offload(offloads: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Whether each call's feed reaches an offloaded result: an offload at state position p
    is fed by the first call whose state passes p."""
    before = np.concatenate(([0], lengths[:-1])) if len(lengths) else lengths
    return np.searchsorted(offloads, lengths, "left") > np.searchsorted(offloads, before, "left")


class _Budgets(NamedTuple):
    """Each call's input budget (`_summarization`; +inf where there is none) and the lowest:
    a stretch whose last request is within it has no call over its own."""

    each: np.ndarray
    lowest: float


def _budgets(run: DeepAgentsRun, t: _Tables) -> _Budgets | None:
    """The calls' input budgets (`budget_for` of each distinct output limit); None when no
    call has one."""
    budgets = [run.budget_for(limit) for limit in t.calls.outputs]
    if all(b is None for b in budgets):
        return None
    each = np.array([math.inf if b is None else b for b in budgets], dtype=float)
    return _Budgets(each[t.calls.output_of], float(each.min()))


def _limits(run: DeepAgentsRun) -> tuple[float, float]:
    """The lowest token and message limits among the trigger clauses' metrics and argument
    truncation's trigger: below both, neither can act."""
    tokens, messages = math.inf, math.inf
    metrics = [m for clause in run.trigger for m in clause]
    if run.truncate_when is not None:
        metrics.append(run.truncate_when)
    for by_messages, limit in metrics:
        if limit is None:
            continue
        if by_messages:
            messages = min(messages, limit)
        else:
            tokens = min(tokens, limit)
    return tokens, messages


def _window(run: DeepAgentsRun) -> tuple[int, int, int]:
    """(the effective list's first state position, the summary's tokens, the state's tokens
    from that position), as the run holds them now."""
    ev = run.event
    n = len(run.view)
    if ev is None:
        return 0, 0, run.etok.total(0, n)
    return ev.cutoff, ev.tokens, run.etok.total(ev.cutoff, n)


def _next_step(
    run: DeepAgentsRun,
    k: int,
    t: _Tables,
    held_now: tuple[int, int, int],
    budgets: _Budgets | None,
    token_limit: float,
    message_limit: float,
) -> int:
    """The first call from `k` on that needs the real step (see the module docstring), from
    the run's state now (`held_now`: its `_window`)."""
    at, forced, total = t.calls.at, t.forced, t.total
    fed = len(run.view)
    start, summary, window = held_now
    i = bisect_left(forced, k)
    stop = forced[i] if i < len(forced) else len(at)
    # the request of a call whose state is n long: base + total[n]
    base = run.fixed + summary + window - total[fed]
    if token_limit < math.inf:
        stop = min(stop, bisect_left(at, bisect_left(total, token_limit - base)))
    if message_limit < math.inf:
        # the effective list holds the summary and the state from `start` on
        need = message_limit - 1 + start if run.event is not None else message_limit
        stop = min(stop, bisect_left(at, need))
    stop = max(stop, k)
    if budgets is not None and stop > k and base + total[at[stop - 1]] > budgets.lowest:
        over = np.flatnonzero(base + t.sums[t.calls.lengths[k:stop]] > budgets.each[k:stop])
        if len(over):
            stop = k + int(over[0])
    return stop
