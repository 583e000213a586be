"""Count-only form of a request-only stage that acts only over a token threshold
(`ctxlab._replay.policies.engine.acts_over`), the policy's only stage: docs/writing-a-policy.md's
`DigestStage`, or a user's.

The stage's input at a call is the history fed so far, so its count is the tool schemas plus
an entry of the history's prefix sums, which never falls from one call to the next: the calls
at or under the threshold are a first stretch that sends the history as it is (counts by
kind: prefix sums, vectorised), and every later call sends what a fresh stage sends there
(the capability's promise (b)). That request does not depend on the threshold, so it is
worked out once per call and remembered per trace, counter and every other setting
(`Requests`, kept with the trace's facts): a slider move to a new threshold runs the stage
only at calls no earlier move reached, then costs array slices and the walk that makes the
events. A running stage reports a position once (promise (c)): each call's events are the
fresh stage's without the positions an earlier call listed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Hashable
from numbers import Real
from typing import TYPE_CHECKING

import numpy as np

from ctxlab._cost import tokens as tk
from ctxlab._messages import KINDS
from ctxlab._replay.policies._engine_counts import Sums, TokenCache
from ctxlab._replay.policies._engine_facts import TraceFacts, TurnTable, facts, turn_table
from ctxlab._replay.policies.base import Files
from ctxlab._replay.policies.counts_only import CallCounts, fed_lengths, raw_counts
from ctxlab._replay.policies.engine import (
    Context,
    Stage,
    StagePolicy,
    acting_threshold,
    history_items,
)

if TYPE_CHECKING:
    from ctxlab._replay.policies.base import Event
    from ctxlab._trace import Trace
    from ctxlab.summarizers import Summarizer


SETTINGS = 4
"""Settings (all but the threshold) whose requests a trace keeps, the most recently used."""


class Requests:
    """What a fresh stage sends at each call over a threshold, for one setting of everything
    but the threshold: worked out for every call from `first` on (a threshold's acting calls
    are always the calls from one on, so a lower threshold extends the stretch downwards).

    Per call it keeps the request's messages and tokens by kind (tool schemas excluded), the
    fresh stage's events (`fresh`: what a running stage records at the first call it acts
    at), and its events when it also acted at the call before (`after`: the fresh events
    without that call's positions), which is what it records there when every earlier acting
    call's positions are among the call before's (`nested`, as when a stage acts on ever more
    of the history): a move then gathers stored lists, without a walk over the positions."""

    def __init__(self, table: TurnTable) -> None:
        self.table = table
        """The calls described (`turn_table`: the same object while the trace's calls are)."""
        calls = len(table.fed)
        self.first = calls
        self.messages = np.zeros(calls, dtype=np.int64)
        self.by_kind = {k: np.zeros(calls, dtype=np.int64) for k in KINDS}
        self.fresh: list[tuple[Event, ...]] = [()] * calls
        self.after: list[tuple[Event, ...]] = [()] * calls
        self.nested = np.zeros(calls, dtype=bool)
        """`[t]`: every position the events at `t - 1` list is among those at `t`."""


def positions(events: tuple[Event, ...]) -> set[int]:
    """Every position `events` list."""
    return {p for e in events for p in e.messages}


def without(events: tuple[Event, ...], reported: set[int]) -> tuple[Event, ...]:
    """`events` as a stage that already reported `reported` records them: the other
    positions only, and no event left with none."""
    out = []
    for e in events:
        new = tuple(p for p in e.messages if p not in reported)
        if new:
            out.append(e if len(new) == len(e.messages) else dataclasses.replace(e, messages=new))
    return tuple(out)


def setting_key(
    policy: StagePolicy, trace: Trace, stage: Stage, attribute: str, window: int | None
) -> Hashable | None:
    """What the requests over the threshold may depend on, the `Requests` key: the policy's
    and the stage's classes (a class defined again is another key), the window, the policy's
    setting and the fresh stage's plain values (numbers, text, tuples of them), both without
    the threshold. The policy field named like the stage's threshold is left out only when
    moving it moves nothing of a fresh stage but that attribute (checked on a stage made with
    another value); a field that also sets another plain value still differs there. None
    (nothing remembered) for a setting that is not JSON-able."""
    params = policy.params()
    value = getattr(stage, attribute)
    plain = {
        k: v for k, v in getattr(stage, "__dict__", {}).items() if k != attribute and _plain(v)
    }
    try:
        other = dataclasses.replace(policy, **{attribute: value + 1})
        moved = other.stages(trace, window)[0]
        same = {k: v for k, v in vars(stage).items() if k != attribute}
        if {k: v for k, v in vars(moved).items() if k != attribute} == same and getattr(
            moved, attribute
        ) == value + 1:
            params.pop(attribute, None)
    except (TypeError, ValueError, IndexError):
        pass  # not a dataclass field, a value refused: the whole setting is the key
    try:
        text = json.dumps([window, params, plain], sort_keys=True)
    except (TypeError, ValueError):
        return None
    return (type(policy), type(stage), text)


def _plain(value: object) -> bool:
    """A number, text, bool, None, or a tuple of such: a value that is the same setting
    whenever it compares equal (an object's identity may be reused once it is freed)."""
    if isinstance(value, tuple):
        return all(map(_plain, value))
    return value is None or isinstance(value, (bool, int, float, str))


def acts_over_counts(
    policy: StagePolicy, trace: Trace, summarizer: Summarizer
) -> CallCounts | None:
    """`policy`'s counts and events on `trace` when it runs one stage that declares
    `acts_over` (made as a replay makes it, so a refused setting raises as it would there),
    else None."""
    if type(policy).start is not StagePolicy.start:
        return None  # a run of its own making: its calls are not the stage engine's
    window = policy.window_for(trace)
    stages = policy.stages(trace, window)
    if len(stages) != 1 or (attribute := acting_threshold(stages[0])) is None:
        return None
    stage = stages[0]
    threshold = getattr(stage, attribute)
    if not isinstance(threshold, Real):
        return None
    cpt = policy.counter_chars_per_token(trace)
    history = facts(trace, cpt)
    tools = tk.tool_schema_tokens(trace.tools, cpt)
    fed = fed_lengths(trace)
    counts = raw_counts(history, fed, tools)
    # the stage's input count never falls: the calls over the threshold are those from `t0`
    t0 = int(np.searchsorted(counts.context_tokens, float(threshold), side="right"))
    calls = len(fed)
    if t0 >= calls:
        return counts
    key = setting_key(policy, trace, stage, attribute, window)
    requests = remembered(history, None if key is None else (key, summarizer), trace)
    if t0 < requests.first:
        run_fresh(policy, trace, summarizer, window, history, tools, requests, t0)
    messages = counts.messages.copy()  # `fed` is a read-only table
    messages[t0:] = requests.messages[t0:]
    by_kind = counts.by_kind
    for k in KINDS:
        by_kind[k][t0:] = requests.by_kind[k][t0:]
    by_kind["tools"][t0:] += tools
    context = np.add.reduce([by_kind[k] for k in KINDS])
    events = counts.events
    events[t0:] = walk(requests, t0)
    return counts._replace(messages=messages, context_tokens=context, events=events)


def remembered(history: TraceFacts, key: Hashable | None, trace: Trace) -> Requests:
    """The `Requests` kept with the trace's facts (its counter's) for `key` (the setting but
    the threshold, and the summariser), made anew when the trace's calls changed since; no
    key, or a summariser that cannot be one, gets fresh ones (this move's only). The
    `SETTINGS` used last are kept (the events they hold grow with calls times positions:
    6.8 MB for the docs example on the bench's 1,000-turn trace)."""
    table = turn_table(trace)
    try:
        hash(key)
    except TypeError:
        key = None
    if key is None:
        return Requests(table)
    known: dict[Hashable, Requests] = history.kept("acts over", dict)
    found = known.pop(key, None)  # put back last: the most recently used
    if found is None or found.table is not table:
        found = Requests(table)
    known[key] = found
    while len(known) > SETTINGS:
        del known[next(iter(known))]
    return found


def run_fresh(
    policy: StagePolicy,
    trace: Trace,
    summarizer: Summarizer,
    window: int | None,
    history: TraceFacts,
    tools: int,
    requests: Requests,
    t0: int,
) -> None:
    """Run a fresh stage at each call from `t0` to `requests.first` (exclusive) on the history
    fed there, keep what it sends, then what changed for `after`, and move `first` to `t0`."""
    cpt = history.chars_per_token
    tok = TokenCache(cpt, history.tokens)
    sums, files = Sums(tok), Files()
    items, fed = history_items(history), fed_lengths(trace)
    for t in range(t0, requests.first):
        turn = trace.turns[t]
        ctx = Context(
            turn, trace, summarizer, files, [], cpt, tools, window, tok, sums
        )  # one call, as `StageRun.apply_stages` makes it
        out = policy.stages(trace, window)[0].apply(list(items[: int(fed[t])]), ctx)
        for k, v in tok.by_kind(out, KINDS).items():
            requests.by_kind[k][t] = v
        requests.messages[t] = len(out)
        requests.fresh[t] = tuple(ctx.events)
    end = min(requests.first + 1, len(requests.fresh))
    for t in range(t0 + 1, end):
        before, now = requests.fresh[t - 1], requests.fresh[t]
        earlier = positions(before)
        requests.after[t] = without(now, earlier)
        requests.nested[t] = earlier <= positions(now)
    requests.first = t0


def walk(requests: Requests, t0: int) -> list[list[Event]]:
    """Each call's events from `t0` on, for a stage that acts at every one of them: the fresh
    events at `t0`, then, while every position listed so far is among the last call's, the
    stored `after`, and past a call where that fails, the fresh events without the positions
    listed so far (gathered as it goes)."""
    calls = len(requests.fresh)
    breaks = np.flatnonzero(~requests.nested[t0 + 1 :])
    # `after[t]` holds while the positions of t0..t-2 are among t-1's: up to the first break
    stop = t0 + 1 + (int(breaks[0]) + 1 if len(breaks) else calls)
    stop = min(stop, calls)
    out = [list(requests.fresh[t0]), *map(list, requests.after[t0 + 1 : stop])]
    if stop < calls:
        reported: set[int] = set()
        for t in range(t0, stop):
            reported |= positions(requests.fresh[t])
        for t in range(stop, calls):
            now = without(requests.fresh[t], reported)
            reported |= positions(now)
            out.append(list(now))
    return out


__all__ = [
    "SETTINGS",
    "Requests",
    "acts_over_counts",
    "remembered",
    "run_fresh",
    "setting_key",
    "walk",
]
