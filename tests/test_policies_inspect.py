"""Inspect AI presets. Source: UKGovernmentBEIS/inspect_ai docs/compaction.qmd (threshold 0.9,
128k default window, CompactionEdit keep_tool_uses=3, CompactionTrim preserve=0.8, system and
input messages always kept)."""

from __future__ import annotations

from ctxlab import replay
from ctxlab.policies import (
    InspectEdit,
    InspectSummary,
    InspectTrim,
)
from ctxlab.summarizers import Fixed
from ctxlab.trace import from_messages
from tests._policy_traces import agent


def test_inspect_defaults_and_fallback_window():
    assert InspectEdit().threshold == 0.9 and InspectTrim().preserve == 0.8
    trace = from_messages(agent(2))
    assert InspectSummary().window_for(trace) == 128_000


def test_inspect_trim_preserves_share_and_input():
    trace = from_messages(agent(12))
    result = replay(trace, InspectTrim(threshold=1500, window=2000))
    first = next(c for c in result.calls if c.events)
    assert first.events[0].kind == "trim"
    assert 0 not in first.events[0].messages and 1 not in first.events[0].messages
    assert all(c.orphans == 0 for c in result.calls)


def test_inspect_edit_keeps_three_tool_uses():
    trace = from_messages(agent(12))
    result = replay(trace, InspectEdit(threshold=1500, window=2000))
    first = next(c for c in result.calls if c.events)
    tool_positions = [p for p in range(3, first.position, 2)]
    assert set(first.events[0].messages) == set(tool_positions[:-3])


def test_inspect_summary_keeps_input():
    trace = from_messages(agent(12))
    result = replay(trace, InspectSummary(threshold=1500, window=2000), summarizer=Fixed("S"))
    first = next(c for c in result.calls if c.events)
    assert first.messages == 3  # system, task, summary


def test_inspect_summary_instructions_reach_the_summariser():
    """`instructions` are inserted into the prompt the summariser receives."""

    class Recording:
        name = "recording"

        def __init__(self) -> None:
            self.prompts: list[str] = []

        def summarize(self, messages, *, prompt):
            self.prompts.append(prompt)
            return "S"

    rec = Recording()
    trace = from_messages(agent(12))
    policy = InspectSummary(threshold=1500, window=2000, instructions="Keep file paths.")
    replay(trace, policy, summarizer=rec)
    assert rec.prompts and "Keep file paths." in rec.prompts[0]
    assert "{messages}" in rec.prompts[0]
