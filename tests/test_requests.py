"""`ctxlab._replay.requests` rebuilds each replayed request from the replay's events.

For deepagents the rebuilt request must be the request itself: its token count (the policy's
own counter) equals the replay's `context_tokens` at every turn, and message for message it is
what the real deepagents middleware sends (`tests/deepagents_oracle.py`). Every catalogue
preset's rebuilt request also has the replay's message count and token count at every turn.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._messages import is_summary, message_text
from ctxlab._replay.policies.catalog import PRESETS
from ctxlab._replay.replay import Replay, replay
from ctxlab._replay.requests import Requests, request_messages
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import Fixed
from tests.deepagents_oracle import run_oracle
from tests.synthetic import make_trace

SUMMARY = "## SUMMARY\n" + "Progress was made. " * 40

# id: (format, turns, policy parameters, trace kwargs)
DEEP: dict[str, tuple[str, int, dict[str, Any], dict[str, Any]]] = {
    "openai-30k": ("openai", 160, {"window": 30_000}, {}),
    "openai-stress": ("openai", 160, {"window": 100_000, "stress": 0.15}, {}),
    "anthropic-30k-overflow": (
        "anthropic",
        160,
        {"window": 30_000, "max_output_tokens": 4096},
        {"large_human_at": 60, "huge_human_at": 100},
    ),
    "anthropic-no-profile": ("anthropic", 160, {"window": None}, {}),
    "openai-same-path-keep-messages": (
        "openai",
        160,
        {
            "window": 100_000,
            "trigger": ("tokens", 30_000),
            "keep": ("messages", 12),
            "truncate_args_settings": {
                "trigger": ("messages", 40),
                "keep": ("tokens", 6_000),
                "max_length": 500,
            },
        },
        {"same_path": 0.5},
    ),
}


def _deep_replay(case: str) -> tuple[Replay, DeepAgents]:
    fmt, turns, params, kwargs = DEEP[case]
    trace = make_trace(turns, fmt=fmt, seed=len(case), **kwargs)
    cpt = 3.3 if fmt == "anthropic" else 4.0
    policy = DeepAgents(chars_per_token=cpt, **params)
    return replay(trace, policy, Fixed(SUMMARY)), policy


def _deviations(result: Replay, cpt: float) -> list[int]:
    requests = Requests(result)
    tools = result.turns["tools_tokens"].to_list()
    counted = result.turns["context_tokens"].to_list()
    out = []
    for t in range(len(counted)):
        sent = sum(tk.message_tokens(m.message, cpt) for m in requests.at(t))
        out.append(sent + tools[t] - counted[t])
    return out


@pytest.mark.parametrize("case", list(DEEP))
def test_deepagents_request_tokens_match_the_replay_at_every_turn(case: str) -> None:
    result, policy = _deep_replay(case)
    assert len(result.event_list) > 10  # the case exercises compaction
    deviations = _deviations(result, policy.resolve(result.trace).chars_per_token)
    assert max(map(abs, deviations)) == 0
    requests = Requests(result)
    counts = result.turns["messages"].to_list()
    for t in range(len(counts)):
        assert len(requests.at(t)) == counts[t] + 1  # + the system prompt


def _session_free(content: Any) -> Any:
    """deepagents draws history file names from uuid4; ctxlab's are deterministic."""
    if isinstance(content, str):
        content = re.sub(r"session_[0-9a-f]{32}", "session_X", content)
        return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "U", content)
    return content


def _same(ours: BaseMessage, real: BaseMessage) -> bool:
    if type(ours) is not type(real):
        return False
    if _session_free(ours.content) != _session_free(real.content):
        return False
    if isinstance(ours, AIMessage):
        return [(c["name"], c["args"]) for c in ours.tool_calls] == [
            (c["name"], c["args"]) for c in real.tool_calls
        ]
    return True


@pytest.mark.parametrize(
    "case", ["openai-30k", "anthropic-30k-overflow", "openai-same-path-keep-messages"]
)
def test_deepagents_request_is_what_the_real_middleware_sends(case: str) -> None:
    fmt, turns, params, kwargs = DEEP[case]
    result, policy = _deep_replay(case)
    settings = {k: params[k] for k in ("trigger", "keep", "truncate_args_settings") if k in params}
    oracle = run_oracle(
        result.trace,
        window=params["window"],
        anthropic=fmt == "anthropic",
        max_tokens=params.get("max_output_tokens"),
        tools=result.trace.tools,
        summary_text=SUMMARY,
        settings=settings or None,
    )
    requests = Requests(result)
    assert oracle.requests
    for t, real in oracle.requests.items():
        ours = requests.at(t)[1:]  # the oracle's request carries the system prompt apart
        assert len(ours) == len(real), t
        for mine, theirs in zip(ours, real, strict=True):
            assert _same(mine.message, theirs), (t, mine.source)
            if is_summary(theirs):
                assert (mine.source, mine.status) == (None, "summary")
            else:
                assert mine.source == int(theirs.id[1:]), t


def test_statuses_name_what_the_policy_did() -> None:
    result, _ = _deep_replay("anthropic-30k-overflow")
    requests = Requests(result)
    seen: dict[str, int] = {}
    for t in range(len(result.calls)):
        for m in requests.at(t):
            seen[m.status] = seen.get(m.status, 0) + 1
            if m.status == "offloaded":
                text = message_text(m.message)
                assert "saved" in text or "truncated due to context window" in text
            if m.status == "summary" and m.source is None and is_summary(m.message):
                assert SUMMARY.strip() in message_text(m.message)
            if m.status == "truncated":
                assert isinstance(m.message, AIMessage)
                assert "...(argument truncated)" in str(m.message.tool_calls)
    assert {"kept", "offloaded", "truncated", "summary"} <= set(seen)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_catalogue_requests_are_the_requests_the_engine_sent(name: str) -> None:
    trace = make_trace(120, model="claude-sonnet-4-5")
    result = replay(trace, PRESETS[name](window=30_000), Fixed(SUMMARY))
    counts = result.turns["messages"].to_list()
    requests = Requests(result)
    policy = result.source_policy
    cpt = (
        policy.resolve(trace).chars_per_token
        if isinstance(policy, DeepAgents)
        else policy.counter_chars_per_token(trace)
    )
    assert max(map(abs, _deviations(result, cpt))) == 0
    system = 1 if name == "deepagents" else 0
    for t in range(len(counts)):
        sent = requests.at(t)
        assert len(sent) == counts[t] + system, (name, t)
        assert all(m.source is None or m.source < result.calls[t].position for m in sent)
        if not name.startswith("jetbrains"):  # JetBrains' checkpoints accumulate
            assert sum(m.status == "summary" and m.source is None for m in sent) <= 1 + system


def test_request_messages_needs_the_trace_and_agrees_with_requests() -> None:
    result, _ = _deep_replay("openai-30k")
    last = len(result.calls) - 1
    assert request_messages(result, last) == Requests(result).at(last)
    assert isinstance(request_messages(result, 0)[1].message, HumanMessage)
    result.trace = None
    with pytest.raises(ValueError, match="trace"):
        request_messages(result, 0)


def test_masked_results_carry_the_policy_placeholder() -> None:
    trace = make_trace(120)
    result = replay(trace, PRESETS["clear-tool-uses"](trigger=5_000, keep=2), Fixed(SUMMARY))
    last = Requests(result).at(len(result.calls) - 1)
    masked = [m for m in last if m.status == "masked"]
    assert masked
    assert all(
        isinstance(m.message, ToolMessage) and m.message.content == "[cleared]" for m in masked
    )


def test_deepagents_own_system_prompt_replaces_the_traces() -> None:
    trace = make_trace(20)
    result = replay(trace, DeepAgents(window=None, system_prompt="Be brief."), Fixed(SUMMARY))
    sent = Requests(result).at(3)
    assert (sent[0].message.content, sent[0].source, sent[0].status) == (
        "Be brief.",
        None,
        "summary",
    )
    assert all(m.source != 0 for m in sent)
    assert Requests(result).status(0, 3) == ("dropped", None)
