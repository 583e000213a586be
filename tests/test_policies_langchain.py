"""LangChain presets: SummarizationMiddleware, ClearToolUsesEdit, trim_messages.

Sources: langchain 1.5.2 `langchain/agents/middleware/summarization.py` and
`context_editing.py` (docs/deepagents.md §7, §8); langchain_core `trim_messages`.
"""

from __future__ import annotations

from langchain.agents.middleware.context_editing import ClearToolUsesEdit
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from ctxlab import replay
from ctxlab._trace import from_messages
from ctxlab.policies import ClearToolUses, LangChainSummarization, SlidingWindow
from ctxlab.summarizers import Fixed


def _conversation(n: int, size: int = 400) -> list:
    msgs = [SystemMessage("sys"), HumanMessage("fix the bug in /src/app.py")]
    for i in range(n):
        msgs.append(
            AIMessage("", tool_calls=[{"name": "read_file", "args": {"p": i}, "id": f"c{i}"}])
        )
        msgs.append(ToolMessage("x" * size, tool_call_id=f"c{i}", name="read_file"))
    msgs.append(AIMessage("done"))
    return msgs


def _real_edit_tokens(msgs: list, position: int, **kwargs) -> int:
    """Tokens of the request after the real `ClearToolUsesEdit.apply` (+ the system prompt)."""
    request = list(msgs[1:position])  # request.messages excludes the system prompt
    ClearToolUsesEdit(**kwargs).apply(request, count_tokens=count_tokens_approximately)
    return count_tokens_approximately([msgs[0], *request])


def test_clear_tool_uses_matches_the_real_edit_every_turn():
    """Every turn's request equals what the installed ClearToolUsesEdit produces."""
    for kwargs in (
        {"trigger": 500, "keep": 3},
        {"trigger": 500, "keep": 3, "clear_at_least": 150},
        {"trigger": 300, "keep": 0, "clear_tool_inputs": True},
        {"trigger": 300, "keep": 1, "exclude_tools": ("read_file",)},
    ):
        msgs = _conversation(8)
        trace = from_messages(msgs)
        result = replay(trace, ClearToolUses(**kwargs))
        expected = [_real_edit_tokens(msgs, t.position, **kwargs) for t in trace.turns]
        assert [c.context_tokens for c in result.calls] == expected, kwargs


def test_clear_tool_uses_keeps_last_three():
    """Defaults keep the 3 most recent results; older ones get DEFAULT_TOOL_PLACEHOLDER."""
    trace = from_messages(_conversation(8))
    result = replay(trace, ClearToolUses(trigger=500))
    touched = set()
    for e in result.event_list:
        touched |= set(e.messages)
    assert touched == {3, 5, 7, 9, 11}  # 8 results at positions 3..17, the last 3 kept
    assert result.calls[-1].by_kind["stubs"] > 0


def test_clear_tool_uses_below_trigger_is_untouched():
    """The edit acts only when tokens > trigger (strict)."""
    trace = from_messages(_conversation(3, size=10))
    assert replay(trace, ClearToolUses()).event_list == []


def test_summarization_default_trigger_never_fires():
    """`trigger=None` (the class default) never summarises."""
    trace = from_messages(_conversation(30))
    assert replay(trace, LangChainSummarization()).event_list == []


def test_summarization_keeps_last_messages_and_pairs():
    """keep=("messages", N): cut at len-N, moved back to the AIMessage owning a ToolMessage."""
    trace = from_messages(_conversation(10))
    policy = LangChainSummarization(trigger=("messages", 12), keep=("messages", 5))
    result = replay(trace, policy, summarizer=Fixed("S"))
    first = next(c for c in result.calls if c.events)
    event = first.events[0]
    assert event.kind == "summarize"
    # 13 non-system messages at the first trigger (>= 12); keep 5 -> cut at 8, a ToolMessage
    # -> moved back to the AIMessage that called it: 7 summarised.
    assert event.messages == tuple(range(1, 8))
    assert first.messages == 1 + 1 + 6  # system + summary + the 6 kept
    assert first.by_kind["summary"] > 0
    assert all(getattr(c, "orphans", 0) == 0 for c in result.calls)


def test_sliding_window_starts_on_human_and_keeps_system():
    """trim_messages(strategy="last", start_on="human", include_system=True)."""
    msgs = [SystemMessage("sys")]
    for i in range(6):
        msgs += [HumanMessage(f"q{i} " + "y" * 200), AIMessage(f"a{i} " + "z" * 200)]
    trace = from_messages(msgs)
    result = replay(trace, SlidingWindow(max_tokens=200))
    last = result.calls[-1]
    # ~55 tokens per message: system + the last three (starting on a human message) fit 200
    assert last.messages == 4
    assert last.request is not None
    assert result.event_list and result.event_list[0].kind == "trim"
