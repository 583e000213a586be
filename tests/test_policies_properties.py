"""Properties every catalogue preset must keep, on random agent conversations (hypothesis):
a request never splits a tool call from its result, replay is deterministic, and a request is
never larger than the uncompacted context by more than the summaries and placeholders it
inserted (a placeholder can outgrow a one-line result: SWE-agent's does, faithfully)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab import replay
from ctxlab._trace import from_messages
from ctxlab.policies import PRESETS, get
from ctxlab.summarizers import Fixed

SMALL = {
    "langchain-summarization": {"trigger": ("tokens", 600), "keep": ("messages", 5)},
    "clear-tool-uses": {"trigger": 400, "keep": 2},
    "sliding-window": {"max_tokens": 500},
    "observation-masking": {"n": 2},
    "swe-agent-masking": {"n": 1},
    "openhands-observation-masking": {"attention_window": 4},
    "openhands-llm-summarizing": {"max_size": 10, "keep_first": 1},
    "openhands-amortized": {"max_size": 10, "keep_first": 1},
    "openhands-recent": {"keep_first": 1, "max_events": 6},
    "openhands-conversation-window": {"window": 700},
    "jetbrains-llm-summary": {"n": 2, "keep_last_m_turns": 1},
    "jetbrains-hybrid": {"n": 2, "keep_last_m_turns": 1, "observations_n": 1},
    "claude-code": {"window": 1200, "max_output_tokens": 0, "autocompact_buffer": 300},
    "codex": {"window": 900},
    "inspect-edit": {"threshold": 500, "keep_tool_uses": 1},
    "inspect-trim": {"threshold": 500},
    "inspect-summary": {"threshold": 500},
    "raw": {},
    "tool-result-offload": {"tool_token_limit_before_evict": 20},
}


@st.composite
def conversations(draw: st.DrawFn) -> list:
    msgs: list = [
        SystemMessage("system prompt"),
        HumanMessage("the task " * draw(st.integers(1, 30))),
    ]
    n = draw(st.integers(1, 14))
    for i in range(n):
        if draw(st.booleans()) and i:
            msgs.append(HumanMessage("follow-up " * draw(st.integers(1, 20))))
        k = draw(st.integers(0, 3))
        calls = [{"name": "run", "args": {"i": i, "j": j}, "id": f"c{i}_{j}"} for j in range(k)]
        msgs.append(AIMessage("thinking " * draw(st.integers(0, 10)), tool_calls=calls))
        for c in calls:
            msgs.append(
                ToolMessage("out\n" * draw(st.integers(1, 80)), tool_call_id=c["id"], name="run")
            )
    msgs.append(AIMessage("done"))
    return msgs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_presets_keep_pairs_and_are_deterministic(messages):
    trace = from_messages(messages)
    for name in PRESETS:
        if name == "deepagents":
            continue
        params = SMALL[name]
        first = replay(trace, get(name, **params), summarizer=Fixed("summary"))
        again = replay(trace, get(name, **params), summarizer=Fixed("summary"))
        assert [c.context_tokens for c in first.calls] == [c.context_tokens for c in again.calls]
        assert [list(c.request) for c in first.calls] == [list(c.request) for c in again.calls]
        for c in first.calls:
            assert c.orphans == 0, (name, c.turn)
            inserted = c.by_kind.get("summary", 0) + c.by_kind.get("stubs", 0)
            assert c.context_tokens <= c.baseline_tokens + inserted, (name, c.turn)
