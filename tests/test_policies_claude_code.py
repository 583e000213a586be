"""Claude Code preset. Source: auto-compact at effective window - 13,000 tokens, as reverse-
engineered by users (anthropics/claude-code#31806, #5385); the compacted session restarts from
the system prompt and one continuation message."""

from __future__ import annotations

from ctxlab import replay
from ctxlab._trace import from_messages
from ctxlab.policies import (
    ClaudeCode,
)
from ctxlab.summarizers import Fixed
from tests._policy_traces import agent


def test_claude_code_threshold_and_result():
    """window 10_000: compacts at 10_000 - min(20_000, 20_000)... use explicit numbers."""
    trace = from_messages(agent(12))
    policy = ClaudeCode(window=2000, max_output_tokens=0, autocompact_buffer=500)
    result = replay(trace, policy, summarizer=Fixed("S"))
    first = next(c for c in result.calls if c.events)
    assert first.events[0].tokens_before >= 1500
    assert first.messages == 2  # system + the continuation message
    assert all(c.context_tokens < 1500 + 200 for c in result.calls)
