"""Metrics against hand-computed examples."""

from __future__ import annotations

import pytest

from ctxlab import replay
from ctxlab._cost.pricing import cached_tokens, price_for, rates_for
from ctxlab._evaluate.metrics import cache_frame, common_prefixes, summary
from ctxlab._replay.policies.base import Call
from ctxlab._replay.replay import Replay
from ctxlab._trace import from_messages
from ctxlab.policies import ObservationMasking, Raw, get
from tests._policy_traces import agent


def test_pricing_lookup_and_cache_rules():
    sonnet = price_for("claude-sonnet-4-5")
    assert sonnet is not None and price_for("claude-sonnet-4-5-20250929") == sonnet
    assert price_for("openai:gpt-4o-2024-08-06") == price_for("gpt-4o")
    assert price_for("no-such-model") is None
    gpt = rates_for("gpt-4o")
    assert gpt is not None
    assert cached_tokens(1023, gpt.cache) == 0
    assert cached_tokens(1024 + 127, gpt.cache) == 1024  # 128-token steps
    assert cached_tokens(1024 + 128, gpt.cache) == 1152
    claude = rates_for("claude-sonnet-4-5")
    assert claude is not None and cached_tokens(5000, claude.cache) == 5000


def test_minimum_cacheable_prompts_as_reverified_2026_12_02():
    """Minimums re-checked against stored copies of the providers' docs
    (ctxlab._cost.pricing.VERIFIED):
    Opus 4.5 and Haiku 4.5 cache nothing below 4,096 tokens, Gemini 2.5 below 2,048."""
    for model in ("claude-opus-4-5", "claude-haiku-4-5-20251001"):
        rates = rates_for(model)
        assert rates is not None and rates.cache.min_cacheable == 4096
        assert cached_tokens(4095, rates.cache) == 0
        assert cached_tokens(4096, rates.cache) == 4096
    for model in ("claude-sonnet-4-5", "claude-opus-4-1", "gpt-4.1"):
        rates = rates_for(model)
        assert rates is not None and rates.cache.min_cacheable == 1024
    for model in ("gemini-2.5-pro", "gemini-2.5-flash"):
        rates = rates_for(model)
        assert rates is not None
        assert cached_tokens(2047, rates.cache) == 0
        assert cached_tokens(3000, rates.cache) == 3000  # no step rounding on Gemini


def _replay(requests: list[tuple[tuple[int, int], ...]], outputs: int) -> tuple[Replay, object]:
    trace = from_messages(agent(len(requests) - 1), model="claude-sonnet-4-5")
    calls = [
        Call(i, t.position, sum(x[1] for x in r), {}, len(r), [], None, request=r)
        for i, (t, r) in enumerate(zip(trace.turns, requests, strict=True))
    ]
    return Replay(trace.trace_id, "x", {}, calls, recorded=[None] * len(calls)), trace


def test_cache_simulation_by_hand():
    """Three requests: 2000 -> 2000+500 (extends) -> rewritten after the first 1500 tokens."""
    a, b, c = (1, 1500), (2, 500), (3, 500)
    r1 = (a, b)
    r2 = (a, b, c)
    r3 = (a, (9, 400), c)
    replayed, trace = _replay([r1, r2, r3], 0)
    prefixes, exact = common_prefixes(replayed)
    assert exact and prefixes == [0, 2000, 1500]
    frame = cache_frame(replayed, trace)
    assert frame["cache_read_tokens"].to_list() == [0, 2000, 1500]
    # Anthropic: what is not read is written (1.25x), requests above the 1,024 minimum
    assert frame["cache_write_tokens"].to_list() == [2000, 500, 900]
    assert frame["cache_break"].to_list() == [False, False, True]
    assert frame["rebilled_tokens"].to_list() == [0, 0, 1000]
    out = frame["output_tokens"].to_list()
    # genai-prices' Claude Sonnet 4.5: $3 input, $15 output, $0.30 cache read, $3.75 write
    no_cache = (2000 + 2500 + 2400) * 3.0 / 1e6 + sum(out) * 15.0 / 1e6
    assert frame["cost_usd"].sum() == pytest.approx(no_cache)
    with_cache = (
        (2000 + 1500) * 0.30 / 1e6 + (2000 + 500 + 900) * 3.75 / 1e6 + sum(out) * 15.0 / 1e6
    )
    assert frame["cost_usd_with_cache"].sum() == pytest.approx(with_cache)


def test_summary_size_metrics_by_hand():
    trace = from_messages(agent(3), model="gpt-4o")
    result = replay(trace, Raw())
    s = summary(result, trace, window=50)
    tokens = result.turns["context_tokens"].to_list()
    assert s["peak_context_tokens"] == max(tokens)
    assert s["cumulative_input_tokens"] == sum(tokens)
    assert s["mean_input_tokens"] == pytest.approx(sum(tokens) / len(tokens))
    assert s["raw_overflow_turns"] == sum(1 for t in tokens if t > 50)
    assert s["cache_breaks"] == 0 and s["events"] == 0 and s["orphan_turns"] == 0


def test_masking_breaks_the_cache_and_evictions_are_not_recoverable():
    trace = from_messages(agent(8), model="gpt-4o")
    result = replay(trace, ObservationMasking(n=2))
    s = summary(result, trace)
    assert s["cache_breaks"] == len({e.turn for e in result.event_list})
    assert s["recoverability"] == 0.0  # masking writes no file
    assert s["goal_retention"] == 1.0  # the task is never masked


def test_goal_retention_and_recoverability_after_summaries():
    trace = from_messages(agent(12), model="gpt-4o")
    result = replay(
        trace, get("claude-code", window=2000, max_output_tokens=0, autocompact_buffer=500)
    )
    s = summary(result, trace)
    assert s["goal_retention"] is not None and s["goal_retention"] < 1.0
    assert s["recoverability"] == 1.0  # the compacted history file holds every evicted message
    assert s["summarizer_input_tokens"] > 0 and s["summarizer_output_tokens"] > 0


def test_reference_after_eviction():
    """A later call naming a path whose only mention was masked counts once."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    msgs = [SystemMessage("s"), HumanMessage("go")]
    msgs += [
        AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "a"}]),
        ToolMessage("found /src/deep/mod.py here", tool_call_id="a"),
    ]
    for i in range(3):
        msgs += [
            AIMessage("", tool_calls=[{"name": "run", "args": {"i": i}, "id": f"r{i}"}]),
            ToolMessage("ok", tool_call_id=f"r{i}"),
        ]
    msgs.append(
        AIMessage("", tool_calls=[{"name": "read", "args": {"p": "/src/deep/mod.py"}, "id": "z"}])
    )
    trace = from_messages(msgs)
    assert summary(replay(trace, ObservationMasking(n=1)), trace)["references_after_eviction"] == 1
    assert summary(replay(trace, Raw()), trace)["references_after_eviction"] == 0


def test_cache_estimate_without_requests_breaks_at_summaries():
    """Runs without `Call.request` get the event-based estimate: a summary keeps only the
    system prompt and tools cached; other turns reuse the whole previous request. (Deep Agents
    fills it, exactly: tests/test_cache_deepagents.py; here its requests are taken away.)"""
    from dataclasses import replace

    from ctxlab.policies import DeepAgents

    trace = from_messages(agent(30), model="gpt-4o")
    policy = DeepAgents(window=3000, truncate_args_settings=None)
    filled = replay(trace, policy)
    assert common_prefixes(filled)[1] and summary(filled, trace)["cache_exact"]
    result = replace(filled, calls=[replace(c, request=None) for c in filled.calls])
    prefixes, exact = common_prefixes(result)
    assert not exact and not summary(result, trace)["cache_exact"]
    summarized = {e.turn for e in result.event_list if e.kind == "summarize"}
    assert summarized
    s = summary(result, trace)
    assert s["cache_breaks"] == len(summarized)
    calls = result.calls
    for i in range(1, len(calls)):
        if calls[i].turn in summarized:
            fixed = calls[i].by_kind["system"] + calls[i].by_kind["tools"]
            assert prefixes[i] == min(fixed, calls[i - 1].context_tokens)
        else:
            assert prefixes[i] == calls[i - 1].context_tokens
