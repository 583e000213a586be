"""Codex preset. Source: openai/codex `codex-rs/core/src/codex/compact.rs` (auto-compact at
90% of the window; user messages kept, newest first, up to COMPACT_USER_MESSAGE_MAX_TOKENS =
20,000; the summary follows `templates/compact/summary_prefix.md`)."""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from ctxlab import replay
from ctxlab._replay.policies.codex import CODEX_SUMMARY_PREFIX
from ctxlab._trace import from_messages
from ctxlab.policies import (
    Codex,
)
from ctxlab.summarizers import Fixed
from tests._policy_traces import agent


def test_codex_keeps_user_messages_and_prefix():
    msgs = agent(12)
    msgs.insert(10, HumanMessage("also keep the tests green"))
    trace = from_messages(msgs)
    result = replay(trace, Codex(window=1500), summarizer=Fixed("S"))
    first = next(c for c in result.calls if c.events)
    assert first.events[0].tokens_before >= int(1500 * 0.9)
    # system + both user messages + summary
    assert first.messages == 4
    assert 1 not in first.events[0].messages and 10 not in first.events[0].messages
    assert CODEX_SUMMARY_PREFIX.startswith("Another language model started")


def test_codex_user_budget_cuts_the_oldest():
    msgs = agent(12)
    msgs[1] = HumanMessage("task " * 400)  # ~500 tokens
    trace = from_messages(msgs)
    result = replay(trace, Codex(window=2000, user_message_max_tokens=100), summarizer=Fixed("S"))
    first = next(c for c in result.calls if c.events)
    assert first.by_kind["human"] <= 100 + 10
