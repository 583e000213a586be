"""Every LangSmith export and sample under ../shared/data loads with exact counts.

The expected numbers were read off the files by hand (see each comment): messages of the
main conversation (system prompt included, summaries and subagents excluded), agent turns,
harness calls (planners, judges, summarisers), subagents, recorded compaction points and
recorded input tokens.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab

CHAT_LANGCHAIN = (
    "real-traces/langsmith-runops-chat-langchain/"
    "run_ops_1efb27a4-5264-6908-9ab5-23fc3c60ae2d.jsonl.gz"
)
CASES = {
    # create_agent ReAct loop: call 1 sees [system, human] -> AI(read_file); call 2 sees
    # [system, human, ai, tool] -> final AI. Usage 120 + 400 input tokens.
    "samples/langchain-tracer-ops_create_agent.json": dict(
        messages=5, turns=2, harness=0, subagents=0, compactions=0, input_tokens=520
    ),
    # deepagents with one `task`: main agent [sys, human] -> AI(task), then
    # [sys, human, ai, tool] -> AI; the general-purpose subagent runs inside the task tool run.
    "samples/langchain-tracer-ops_deepagents_subagent.json": dict(
        messages=5, turns=2, harness=0, subagents=1, compactions=0, input_tokens=6200
    ),
    # chat-langchain: `respond` is the agent (6 then 7 input messages; the retry extends the
    # first answer); planner, 3x generate_queries and 2x check_hallucination are harness calls.
    # No usage recorded (streamed without usage).
    CHAT_LANGCHAIN: dict(
        messages=8, turns=2, harness=6, subagents=0, compactions=0, input_tokens=None
    ),
    # wrap_openai: one call, one user message in, usage_metadata input_tokens 43 / 9.
    "real-traces/langsmith-wrap-openai-payloads/langsmith_py_wrap_openai_reasoning.json.gz": dict(
        messages=2, turns=1, harness=0, subagents=0, compactions=0, input_tokens=43
    ),
    "real-traces/langsmith-wrap-openai-payloads/langsmith_py_wrap_openai_stream.json.gz": dict(
        messages=2, turns=1, harness=0, subagents=0, compactions=0, input_tokens=9
    ),
}


@pytest.mark.parametrize("relpath", sorted(CASES))
def test_shared_file_loads_with_exact_counts(shared: Path, relpath: str) -> None:
    path = shared / "data" / relpath
    traces = ctxlab.load(path)
    assert len(traces) == 1
    trace = traces[0]
    want = CASES[relpath]
    assert len(trace.messages) == want["messages"]
    assert len(trace.turns) == want["turns"]
    assert len(trace.harness_calls) == want["harness"]
    assert len(trace.subagents) == want["subagents"]
    assert len(trace.recorded_compactions) == want["compactions"]
    assert trace.recorded_input_tokens == want["input_tokens"]
    assert trace.format.startswith("langsmith")
    # Every turn's output is the history message at its position.
    for turn in trace.turns:
        assert turn.output is not None and trace.messages[turn.position] is turn.output


def test_chat_langchain_conversation_shape(shared: Path) -> None:
    path = shared / "data/real-traces/langsmith-runops-chat-langchain"
    trace = ctxlab.load(path)[0]
    kinds = [type(m) for m in trace.messages]
    assert kinds == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        HumanMessage,
        AIMessage,
        HumanMessage,
        AIMessage,
        AIMessage,
    ]
    assert trace.model == "gpt-4o-mini"
    assert [t.position for t in trace.turns] == [6, 7]
    # The agent's ids match the LangGraph state the root run returned.
    assert trace.messages[-1].id == "run-83dcd4ef-2ca1-41f8-9e85-847e0f6bed23"
    assert {t.name for t in trace.harness_calls} == {"ChatOpenAI"}


def test_deepagents_subagent_is_linked_to_its_task_call(shared: Path) -> None:
    trace = ctxlab.load(shared / "data/samples/langchain-tracer-ops_deepagents_subagent.json")[0]
    (sub,) = trace.subagents
    task_calls = [c for m in trace.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert task_calls[0]["name"] == "task"
    assert sub.parent_tool_call_id == task_calls[0]["id"] == "call_task_1"
    assert sub.parent_trace_id == trace.trace_id
    assert len(sub.messages) == 5 and len(sub.turns) == 2
    assert isinstance(sub.messages[3], ToolMessage)
    assert trace.system_prompt != sub.system_prompt


def test_shared_directory_loads_every_file_on_its_own(shared: Path) -> None:
    """Every real file of every format loads from one directory load, each by its own reader,
    with no errors: the counts per format are the ones the format tests check file by file
    (a Claude Code session's subagent files join their session instead of standing alone)."""
    traces = ctxlab.load(shared / "data" / "real-traces")
    assert traces.errors == []
    by_format = Counter(t.format for t in traces)
    assert by_format == {
        "anthropic-managed-agents": 1,
        "claude-code": 2,
        "codex": 1,
        "inspect-ai": 1,
        "openhands": 4,
        "otel": 3,
        "swe-agent": 1,
        "langsmith-ops": 3,
    }
    assert all(t.turns for t in traces)
