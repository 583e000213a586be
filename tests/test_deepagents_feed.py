"""A Deep Agents run feeds the recorded history from a `Feed` worked out once per trace and feed
settings (`ctxlab._replay.policies.deepagents.feed`): runs that share one replay as a fresh trace
would, leave it unchanged, and name id-less offloads by their own counter, in call order."""

from __future__ import annotations

import copy
import dataclasses

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ctxlab import replay
from ctxlab._evaluate import metrics
from ctxlab._replay.policies._engine_facts import facts
from ctxlab._replay.policies.deepagents.feed import KEPT_FEEDS, feed_of
from ctxlab._replay.policies.deepagents.state import deterministic_hex
from ctxlab._replay.replay import Replay
from ctxlab._trace import Trace, from_messages
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import CachedExtractive, Fixed
from tests.synthetic import make_trace

MODEL = "claude-sonnet-4-5"
CPT = 3.3  # Deep Agents' counter for Claude


def _result(r: Replay, trace: Trace) -> tuple:
    cache = metrics.cache_frame(r, trace, model=MODEL)
    files = {p: r.file_bytes(p) for p in r.files}
    return r.turns.to_dicts(), r.events.to_dicts(), files, cache.to_dicts()


def _feeds(trace: Trace) -> dict:
    return facts(trace, CPT).built["deepagents-feeds"]


def test_runs_share_one_feed_and_replay_as_a_fresh_trace_would() -> None:
    trace = make_trace(80, fmt="anthropic", seed=5, model=MODEL, big=0.1)
    policy = DeepAgents(
        trigger=("fraction", 0.3),
        tool_token_limit_before_evict=500,
        truncate_args_settings={
            "trigger": ("fraction", 0.2),
            "keep": ("fraction", 0.1),
            "max_length": 40,
        },
    )
    first = replay(trace, policy, CachedExtractive())
    [feed] = _feeds(trace).values()
    lists = [part for part in dataclasses.astuple(feed) if isinstance(part, list)]  # copies
    again = replay(trace, policy, CachedExtractive())
    assert list(_feeds(trace).values()) == [feed]  # the second run built nothing
    assert [part for part in dataclasses.astuple(feed) if isinstance(part, list)] == lists
    kinds = {e.kind for e in first.event_list}
    assert {"offload_tool_result", "summarize", "truncate_args"} <= kinds
    fresh = dataclasses.replace(trace, messages=copy.deepcopy(trace.messages))
    expected = _result(replay(fresh, policy, CachedExtractive()), fresh)
    assert _result(first, trace) == _result(again, trace) == expected


def test_each_feed_setting_has_its_own_feed_and_the_last_few_are_kept() -> None:
    trace = make_trace(40, fmt="anthropic", seed=2, model=MODEL, big=0.2)
    limits = [300, 600, 1_200, 2_400, 4_800, 9_600]
    results = {}
    for limit in limits:
        results[limit] = replay(trace, DeepAgents(tool_token_limit_before_evict=limit), Fixed("s"))
    feeds = _feeds(trace)
    assert len(feeds) == KEPT_FEEDS
    assert [key[1] for key in feeds] == [4 * x for x in limits[-KEPT_FEEDS:]]  # limits in chars
    offloads = [len(r.files) for r in results.values()]
    assert offloads == sorted(offloads, reverse=True) and offloads[0] > offloads[-1]
    for limit in limits[:2]:  # fed again after their feeds were dropped
        again = replay(trace, DeepAgents(tool_token_limit_before_evict=limit), Fixed("s"))
        assert _result(again, trace) == _result(results[limit], trace)


def _big_result(call_id: str) -> ToolMessage:
    return ToolMessage("y" * 90_000, tool_call_id=call_id, name="execute")


def _call(call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "execute", "args": {"command": "x"}, "id": call_id}])


def test_a_result_without_a_call_id_is_named_by_the_runs_counter_in_call_order() -> None:
    """The counter also names human-message files and sessions, so which number an id-less
    result gets depends on what the calls before it did: the feed leaves naming to the run."""
    huge = "h" * 200_001
    # the huge human message is evicted at call 0 (counter 1); the result is fed at call 1
    late = from_messages(
        [HumanMessage(huge), _call("c1"), _big_result(""), AIMessage("done")], model=MODEL
    )
    # the result is fed at call 1 (counter 1) before that call evicts the human message
    early = from_messages(
        [HumanMessage("go"), _call("c1"), _big_result(""), HumanMessage(huge), AIMessage("ok")],
        model=MODEL,
    )
    for trace, number in ((late, 2), (early, 1)):
        name = f"/large_tool_results/unknown-{deterministic_hex(trace.trace_id, number)[:8]}"
        for _ in range(2):  # the second run reads the feed the first one built
            r = replay(trace, DeepAgents(window=None), Fixed("s"))
            paths = [e.file_path for e in r.event_list if e.kind == "offload_tool_result"]
            assert paths == [name]
            assert r.files[name] == "y" * 90_000
            assert any(
                e.kind == "offload_human_message" and e.file_path in r.files for e in r.event_list
            )


def test_a_feed_made_from_another_equals_one_built_afresh() -> None:
    """A new limit or argument length is derived from a kept feed (`feed._derived`), in any
    order of settings, and gives what a pass over the history gives."""
    trace = make_trace(60, fmt="anthropic", seed=3, model=MODEL, big=0.2)
    key = ("deepagents-ai", 0, "...(argument truncated)")
    steps = [(300, 40), (1_200, 40), (1_200, 2_000), (None, 10), (300, 10), (4_800, 2_000)]
    derived = []
    for limit, length in steps:  # each from the one before
        derived.append(feed_of(trace, 0, CPT, limit, (key[0], length, key[2])))
    assert any(f.tpos for f in derived) and any(f.offloads for f in derived)
    assert len({len(f.offloads) for f in derived}) > 2 and len({len(f.tpos) for f in derived}) > 1
    for (limit, length), feed in zip(steps, derived, strict=True):
        _feeds(trace).clear()  # built from the history alone
        assert feed_of(trace, 0, CPT, limit, (key[0], length, key[2])) == feed
