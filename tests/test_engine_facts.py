"""The stage engine measures a trace's history once (`_engine_facts`): the facts are right, follow
a history that changed, leave with their trace, and replays that start from them equal replays
of a trace measured afresh."""

from __future__ import annotations

import copy
import dataclasses
import gc

import pytest

from ctxlab import replay
from ctxlab._cost import tokens as tk
from ctxlab._evaluate import metrics
from ctxlab._messages import kind_of
from ctxlab._replay.policies._engine_facts import _FACTS, calls_of, facts
from ctxlab._replay.replay import Replay
from ctxlab._trace import Trace
from ctxlab.policies import get
from ctxlab.summarizers import Fixed
from tests.synthetic import make_trace

PRESETS = ["raw", "clear-tool-uses", "sliding-window", "observation-masking", "codex"]


def _result(r: Replay, trace: Trace) -> tuple:
    cache = metrics.cache_frame(r, trace, model="claude-sonnet-4-5")
    return r.turns.to_dicts(), r.events.to_dicts(), cache.to_dicts()


def _fresh(trace: Trace) -> Trace:
    """The same conversation in new message objects: nothing measured yet."""
    return dataclasses.replace(trace, messages=copy.deepcopy(trace.messages))


def test_facts_hold_each_message_tokens_bucket_calls_and_first_position() -> None:
    trace = make_trace(40, model="claude-sonnet-4-5")
    found = facts(trace, 3.3)
    assert facts(trace, 3.3) is found  # measured once per counter
    assert facts(trace, 4.0) is not found
    assert found.kinds == tuple(kind_of(m) for m in trace.messages)
    for pos, message in enumerate(trace.messages):
        held, (fingerprint, toks), calls, answers = found.metas[id(message)]
        assert held is message
        assert fingerprint == pos + 1
        assert toks == found.counts[pos] == tk.message_tokens(message, 3.3)
        assert toks == found.tokens[id(message)][1]
        assert calls == calls_of(message)
        assert answers == (message.tool_call_id if kind_of(message) == "tool_results" else None)
    assert found.first_free == len(trace.messages) + 1


def test_a_message_object_met_twice_keeps_its_first_position() -> None:
    trace = make_trace(10)
    trace.messages.append(trace.messages[2])
    assert facts(trace, 4.0).metas[id(trace.messages[2])][1][0] == 3


def test_facts_follow_a_growing_history_and_leave_with_their_trace() -> None:
    trace = make_trace(10)
    before = facts(trace, 4.0)
    trace.messages.append(copy.deepcopy(trace.messages[-1]))
    after = facts(trace, 4.0)
    assert len(after.messages) == len(before.messages) + 1
    key = id(trace)
    assert _FACTS.get(trace) is not None
    del trace, before, after
    gc.collect()
    assert key not in _FACTS.table


@pytest.mark.parametrize("preset", PRESETS)
def test_replays_from_measured_facts_equal_replays_of_a_fresh_trace(preset: str) -> None:
    trace = make_trace(150, model="claude-sonnet-4-5", seed=5)
    policy = get(preset)
    first = replay(trace, policy, Fixed("the summary"))  # measures the facts
    again = replay(trace, policy, Fixed("the summary"))  # starts from them
    fresh = _fresh(trace)
    expected = _result(replay(fresh, policy, Fixed("the summary")), fresh)
    assert _result(first, trace) == _result(again, trace) == expected


@pytest.mark.parametrize("preset", PRESETS)
def test_a_history_message_swapped_after_measuring_is_measured_as_itself(preset: str) -> None:
    """Same length, one message replaced by a different one: the stale facts must not be
    read for it (they are checked by identity)."""
    trace = make_trace(150, model="claude-sonnet-4-5", seed=6)
    replay(trace, get(preset), Fixed("the summary"))
    k = next(i for i, m in enumerate(trace.messages) if kind_of(m) == "tool_results")
    trace.messages[k] = trace.messages[k].model_copy(
        update={"content": "a much longer result " * 400}
    )
    swapped = _result(replay(trace, get(preset), Fixed("the summary")), trace)
    fresh = _fresh(trace)
    assert swapped == _result(replay(fresh, get(preset), Fixed("the summary")), fresh)


def test_runs_feed_the_same_history_items() -> None:
    """The history's `Item`s are made once per trace and counter; every run feeds them."""
    from ctxlab._replay.policies.engine import history_items

    trace = make_trace(30, model="claude-sonnet-4-5")
    policy = get("raw")
    first, second = policy.start(trace, Fixed("s")), policy.start(trace, Fixed("s"))
    for run in (first, second):
        for turn in trace.turns:
            run.call(turn)
    items = history_items(facts(trace, first.cpt))
    assert [it.pos for it in items] == list(range(len(trace.messages)))
    assert all(a is b for a, b in zip(first.history, items, strict=False))
    assert all(a is b for a, b in zip(second.history, items, strict=False))


def test_a_deep_agents_replay_measures_only_the_token_counts() -> None:
    """Deep Agents reads the counts; the identity tables (seven times the cost) wait for the
    stage engine."""
    trace = make_trace(40, model="claude-sonnet-4-5")
    replay(trace, get("deepagents"), Fixed("the summary"))
    (found,) = _FACTS.get(trace).values()  # the run measured them
    assert len(found.counts) == len(trace.messages)
    assert not {"kinds", "metas", "tokens"} & set(vars(found))
    replay(trace, get("raw"), Fixed("the summary"))
    assert {"kinds", "metas", "tokens"} <= set(vars(facts(trace, 3.3)))
