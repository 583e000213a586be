"""Plain message lists load as traces: OpenAI chat, Anthropic Messages, LangChain dumps."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)

import ctxlab

CONVERSATION = [
    SystemMessage("You are a coding agent."),
    HumanMessage("What is in a.py?"),
    AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "a.py"}, "id": "c1"}]),
    ToolMessage("print('hi')", tool_call_id="c1", name="read_file"),
    AIMessage("It prints hi."),
]


def check(trace: ctxlab.Trace, fmt: str) -> None:
    assert trace.format == fmt
    assert [m.type for m in trace.messages] == ["system", "human", "ai", "tool", "ai"]
    assert [t.position for t in trace.turns] == [2, 4]
    assert trace.messages[2].tool_calls[0]["args"] == {"path": "a.py"}


def test_openai_request_with_tools_and_model(tmp_path: Path) -> None:
    body = {
        "model": "gpt-4o",
        "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "What is in a.py?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "print('hi')"},
            {"role": "assistant", "content": "It prints hi."},
        ],
    }  # fmt: skip
    path = tmp_path / "openai.json"
    path.write_text(json.dumps(body))
    (trace,) = ctxlab.load(path)
    check(trace, "openai-messages")
    assert trace.model == "gpt-4o" and len(trace.tools) == 1


def test_anthropic_request(tmp_path: Path) -> None:
    body = {
        "system": "You are a coding agent.",
        "messages": [
            {"role": "user", "content": "What is in a.py?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.py"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "print('hi')"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "It prints hi."}]},
        ],
    }  # fmt: skip
    path = tmp_path / "anthropic.json"
    path.write_text(json.dumps(body))
    (trace,) = ctxlab.load(path)
    check(trace, "anthropic-messages")


def test_messages_to_dict_jsonl_one_trace_per_line(tmp_path: Path) -> None:
    line = json.dumps(messages_to_dict(CONVERSATION))
    path = tmp_path / "chats.jsonl"
    path.write_text(line + "\n" + line + "\n")
    traces = ctxlab.load(path)
    assert [t.trace_id for t in traces] == ["chats:1", "chats:2"]
    check(traces[0], "langchain-messages")
