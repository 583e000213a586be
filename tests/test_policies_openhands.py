"""OpenHands condensers (OpenHands `openhands/memory/condenser/impl/*.py`; config defaults from
`openhands/core/config/condenser_config.py`)."""

from __future__ import annotations

from ctxlab import replay
from ctxlab._trace import from_messages
from ctxlab.policies import (
    OpenHandsAmortized,
    OpenHandsConversationWindow,
    OpenHandsLLMSummarizing,
    OpenHandsRecent,
)
from ctxlab.summarizers import Fixed
from tests._policy_traces import agent
from tests.synthetic import make_trace


def test_defaults():
    assert (OpenHandsLLMSummarizing().max_size, OpenHandsLLMSummarizing().keep_first) == (100, 1)
    assert OpenHandsRecent().max_events == 100 and OpenHandsAmortized().max_size == 100


def test_llm_summarizing_condenses_to_half():
    """view > max_size -> head(keep_first) + summary + tail = max_size // 2 (minus orphans)."""
    trace = from_messages(agent(10))
    result = replay(
        trace, OpenHandsLLMSummarizing(max_size=10, keep_first=1), summarizer=Fixed("S")
    )
    first = next(c for c in result.calls if c.events)
    assert first.events[0].kind == "summarize"
    assert first.messages <= 10 // 2
    assert first.by_kind["summary"] > 0
    assert all(c.orphans == 0 for c in result.calls)
    assert all(c.messages <= 11 for c in result.calls)


def test_amortized_forgets_without_summary():
    trace = from_messages(agent(10))
    result = replay(trace, OpenHandsAmortized(max_size=10, keep_first=1))
    kinds = {e.kind for e in result.event_list}
    assert kinds == {"forget"}
    assert all(c.by_kind.get("summary", 0) == 0 for c in result.calls)
    assert all(c.orphans == 0 for c in result.calls)


def test_recent_keeps_head_and_last_events():
    """head = view[:keep_first]; tail = last max_events - len(head) (no dangling result)."""
    trace = from_messages(agent(10))
    result = replay(trace, OpenHandsRecent(keep_first=1, max_events=6))
    assert max(c.messages for c in result.calls) <= 6
    assert all(c.orphans == 0 for c in result.calls)


def test_conversation_window_keeps_system_and_first_user():
    """On overflow: system + first user message + about half of the rest."""
    trace = from_messages(agent(10))
    result = replay(trace, OpenHandsConversationWindow(window=800))
    event = result.event_list[0]
    assert event.kind == "forget" and 0 not in event.messages and 1 not in event.messages
    assert all(c.orphans == 0 for c in result.calls)


def test_long_trace():
    trace = make_trace(turns=200)
    result = replay(trace, OpenHandsLLMSummarizing())
    assert max(c.messages for c in result.calls) <= 101


def test_forgotten_events_are_clipped_with_openhands_marker():
    """`LLMSummarizingCondenser.get_condensation` renders each forgotten event through
    `truncate_content(str(event), max_chars=max_event_length)`, which keeps the first and last
    `max_chars // 2` characters around "\\n[... Observation truncated due to length ...]\\n"
    (openhands/events/serialization/event.py @76483ad8f5f5)."""

    class Recording:
        name = "recording"

        def __init__(self) -> None:
            self.inputs: list = []

        def summarize(self, messages, *, prompt):
            self.inputs.append(list(messages))
            return "S"

    rec = Recording()
    trace = from_messages(agent(10, size=400))
    replay(trace, OpenHandsLLMSummarizing(max_size=10, keep_first=1, max_event_length=100), rec)
    results = [m for m in rec.inputs[0] if m.type == "tool"]
    assert results
    full = "line\n" * 80
    marker = "\n[... Observation truncated due to length ...]\n"
    assert all(m.content == full[:50] + marker + full[-50:] for m in results)
    rec.inputs.clear()
    replay(trace, OpenHandsLLMSummarizing(max_size=10, keep_first=1, max_event_length=-1), rec)
    assert all(m.content == full for m in rec.inputs[0] if m.type == "tool")
