"""OpenHands V1 (software-agent-sdk) events: the persisted folder, lists and JSON Lines.

The events below follow the SDK's persisted shapes (`openhands.sdk.event`), cut to the fields
the reader uses; the real conversation of ../shared/data/corpus/openhands-v1-sdk is checked in
tests/test_corpus_more.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

import ctxlab
from ctxlab._errors import TraceFormatError


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def _system() -> dict[str, Any]:
    return {
        "id": "sys",
        "kind": "SystemPromptEvent",
        "source": "agent",
        "system_prompt": {"type": "text", "text": "You are OpenHands agent."},
        "tools": [{"title": "terminal", "description": "Run a command.", "kind": "TerminalTool"}],
    }


def _user(event_id: str, text: str) -> dict[str, Any]:
    return {
        "id": event_id,
        "kind": "MessageEvent",
        "source": "user",
        "llm_message": {"role": "user", "content": _text(text)},
    }


def _action(event_id: str, call_id: str, response_id: str, command: str) -> dict[str, Any]:
    return {
        "id": event_id,
        "kind": "ActionEvent",
        "source": "agent",
        "thought": _text(f"run {command}"),
        "tool_name": "terminal",
        "tool_call_id": call_id,
        "tool_call": {
            "id": call_id,
            "name": "terminal",
            "arguments": json.dumps({"command": command}),
        },
        "llm_response_id": response_id,
    }


def _observation(event_id: str, call_id: str, output: str) -> dict[str, Any]:
    return {
        "id": event_id,
        "kind": "ObservationEvent",
        "source": "environment",
        "tool_name": "terminal",
        "tool_call_id": call_id,
        "observation": {"content": _text(output), "kind": "TerminalObservation"},
    }


def _answer(event_id: str, response_id: str, text: str) -> dict[str, Any]:
    return {
        "id": event_id,
        "kind": "MessageEvent",
        "source": "agent",
        "llm_message": {"role": "assistant", "content": _text(text)},
        "llm_response_id": response_id,
    }


def _usage(response_id: str, prompt: int) -> dict[str, Any]:
    return {
        "model": "openai/gpt-4o-mini",
        "prompt_tokens": prompt,
        "completion_tokens": 7,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "context_window": 128000,
        "response_id": response_id,
    }


def _persist(folder: Path, events: list[dict[str, Any]], usages: list[dict[str, Any]]) -> None:
    """The SDK's layout: base_state.json beside events/event-NNNNN-<id>.json."""
    (folder / "events").mkdir(parents=True)
    for n, event in enumerate(events):
        (folder / "events" / f"event-{n:05d}-{event['id']}.json").write_text(json.dumps(event))
    state = {
        "id": folder.name,
        "agent": {"llm": {"model": "openai/gpt-4o-mini"}, "kind": "Agent"},
        "execution_status": "finished",
        "stats": {"usage_to_metrics": {"agent": {"token_usages": usages}}},
    }
    (folder / "base_state.json").write_text(json.dumps(state))


def _run() -> list[dict[str, Any]]:
    return [
        _system(),
        _user("u1", "list the files"),
        _action("a1", "call-1", "resp-1", "ls"),
        _action("a2", "call-2", "resp-1", "pwd"),
        _observation("o1", "call-1", "README.md"),
        _observation("o2", "call-2", "/workspace"),
        _answer("m1", "resp-2", "One file, README.md, in /workspace."),
    ]


def test_a_persisted_folder_is_one_conversation_with_its_recorded_usage(tmp_path: Path) -> None:
    folder = tmp_path / "0a1b2c"
    _persist(folder, _run(), [_usage("resp-1", 900), _usage("resp-2", 1000)])
    (trace,) = ctxlab.load(folder)
    assert (trace.format, trace.trace_id) == ("openhands-v1", "0a1b2c")
    # the two actions of one response are one call whose answer holds both tool calls
    assert [len(t.output.tool_calls) for t in trace.turns] == [2, 0]
    assert [t.input_tokens for t in trace.turns] == [900, 1000]
    assert [t.run_id for t in trace.turns] == ["resp-1", "resp-2"]
    assert [type(m).__name__ for m in trace.turns[1].inputs] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
    ]
    assert trace.turns[0].output.tool_calls[1]["args"] == {"command": "pwd"}
    assert trace.tools == [{"name": "terminal", "description": "Run a command."}]
    assert trace.metadata["context_window"] == 128000
    # a later event file, or the state file, alone gives no second copy of the conversation
    later = sorted((folder / "events").iterdir())[3]
    assert ctxlab.load(later) == []
    assert ctxlab.load(folder / "base_state.json") == []


def test_a_condensation_drops_forgotten_events_and_puts_its_summary_at_its_offset(
    tmp_path: Path,
) -> None:
    events = [
        *_run(),
        _user("u2", "now count the lines"),
        {
            "id": "c1",
            "kind": "Condensation",
            "source": "environment",
            "timestamp": "2026-02-05T11:30:00",
            "forgotten_event_ids": ["a1", "a2", "o1", "o2"],
            "summary": "The agent listed README.md in /workspace.",
            "summary_offset": 2,
            "llm_response_id": "resp-condenser",
        },
        _action("a3", "call-3", "resp-3", "wc -l README.md"),
        _observation("o3", "call-3", "12 README.md"),
        _answer("m2", "resp-4", "Twelve lines."),
    ]
    usages = [_usage(r, p) for r, p in [("resp-1", 900), ("resp-2", 1000), ("resp-3", 400)]]
    _persist(tmp_path / "conv", events, usages)
    (trace,) = ctxlab.load(tmp_path / "conv")
    (compaction,) = trace.compactions
    assert (compaction.turn, compaction.kind, compaction.trigger) == (2, "condensation", "auto")
    assert (compaction.pre_tokens, compaction.post_tokens) == (1000, 400)
    assert compaction.summary == "The agent listed README.md in /workspace."
    assert [t.compacted for t in trace.turns] == [False, False, True, False]
    seen = trace.turns[2].inputs
    assert [type(m).__name__ for m in seen] == [
        "SystemMessage",
        "HumanMessage",
        "HumanMessage",  # the summary, at offset 2
        "AIMessage",  # m1, kept
        "HumanMessage",
    ]
    assert seen[2].content == compaction.summary
    assert [m.content for m in trace.inserted] == [compaction.summary]
    assert all(m is not seen[2] for m in trace.messages)  # not part of the full history
    assert any(
        isinstance(m, ToolMessage) and m.tool_call_id == "call-3" for m in trace.turns[3].inputs
    )


def test_json_lines_and_lists_of_events_are_read_too(tmp_path: Path) -> None:
    lines = tmp_path / "events.jsonl"
    lines.write_text("\n".join(json.dumps(e) for e in _run()) + "\n")
    listed = tmp_path / "events.json"
    listed.write_text(json.dumps(_run()))
    for path in (lines, listed):
        (trace,) = ctxlab.load(path)
        assert trace.format == "openhands-v1"
        assert len(trace.turns) == 2
        assert isinstance(trace.messages[1], HumanMessage)
        assert isinstance(trace.messages[-1], AIMessage)
        assert any("base_state.json" in note for note in trace.notes)


def test_a_bad_event_is_named_by_its_line(tmp_path: Path) -> None:
    run = _run()
    del run[2]["tool_call_id"], run[2]["tool_call"]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in run) + "\n")
    with pytest.raises(TraceFormatError, match=r"line 3: an ActionEvent needs 'tool_call_id'"):
        ctxlab.load(path)


def test_evaluation_lines_of_v1_events_are_v1_traces_with_the_instruction_first(
    tmp_path: Path,
) -> None:
    """OpenHands/benchmarks writes `{instance_id, instruction, metadata, history}` lines whose
    history opens with an ActionEvent: the V0 reader, which also keys on `source` and
    `action`, must leave them to this one. The SDK's 2025 observations hold `output` text."""
    history = [
        _action("a1", "call-1", "resp-1", "ls"),
        {
            "id": "o1",
            "kind": "ObservationEvent",
            "source": "environment",
            "tool_call_id": "call-1",
            "observation": {"kind": "ExecuteBashObservation", "output": "README.md"},
        },
    ]
    line = {
        "instance_id": "task-1",
        "instruction": "List the files.",
        "metadata": {"llm": {"model": "litellm_proxy/gpt-4o"}},
        "history": history,
    }
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (trace,) = ctxlab.load(path)
    assert (trace.format, trace.trace_id, trace.model) == (
        "openhands-v1",
        "task-1",
        "litellm_proxy/gpt-4o",
    )
    assert [m.content for m in trace.messages] == ["List the files.", "run ls", "README.md"]
    assert trace.turns[0].model == "litellm_proxy/gpt-4o"
    assert any("'instruction'" in note for note in trace.notes)
