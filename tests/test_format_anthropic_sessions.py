"""Anthropic Managed Agents session event streams: the real recording and the bare-event shapes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab

REAL = "real-traces/anthropic-managed-agents-events/anthropic_managed_mcp_tools_reject.jsonl.gz"


def _lines(shared: Path) -> list[list]:
    raw = gzip.decompress((shared / "data" / REAL).read_bytes()).decode()
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


def test_real_recording_loads_with_exact_counts(shared: Path) -> None:
    # 1 user message, 3 model requests (span start/end), an MCP tool use the user denied
    # (answered by an error mcp_tool_result) and a web_fetch tool use; usage per request is
    # input + cache read + cache write: 2+0+7780, 2+7780+170, 2+7950+10117.
    (trace,) = ctxlab.load(shared / "data" / REAL)
    assert trace.format == "anthropic-managed-agents"
    assert trace.trace_id == "sesn_01KW5vhbxfVqMHgLH2dWKbJG"
    assert trace.model == "claude-opus-4-8"
    kinds = [type(m) for m in trace.messages]
    assert kinds == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]
    assert [t.input_tokens for t in trace.turns] == [7782, 7952, 18069]
    assert [t.output_tokens for t in trace.turns] == [116, 116, 82]
    assert [t.cache_read_tokens for t in trace.turns] == [0, 7780, 7950]
    assert trace.recorded_input_tokens == 33803
    assert [t.position for t in trace.turns] == [2, 4, 6]
    denied = trace.messages[3]
    assert denied.status == "error" and "rejected" in denied.text
    assert trace.messages[2].tool_calls[0]["name"] == "mcp__exa__web_search_exa"
    assert "894 stars" in trace.messages[6].text
    assert any("per-call inputs are not recorded" in n for n in trace.notes)
    for policy in ("deepagents", "claude-code"):
        assert ctxlab.replay(trace, policy).turns.height == 3


def test_bare_events_and_list_pages_give_the_same_conversation(
    shared: Path, tmp_path: Path
) -> None:
    events = [p for m, p in _lines(shared) if m.endswith("events.stream")]
    jsonl = tmp_path / "events.jsonl"
    jsonl.write_text("\n".join(json.dumps(e) for e in events))
    page = tmp_path / "page.json"
    page.write_text(json.dumps({"data": events, "next_page": None}))
    (recorded,) = ctxlab.load(shared / "data" / REAL)
    for path in (jsonl, page):
        (trace,) = ctxlab.load(path)
        # No sessions.create line: no system prompt, no model, and the notes say so.
        assert [(type(m), m.text) for m in trace.messages] == [
            (type(m), m.text) for m in recorded.messages[1:]
        ]
        assert trace.model is None
        assert [t.input_tokens for t in trace.turns] == [7782, 7952, 18069]
        assert any("no system prompt" in n for n in trace.notes)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda e: (
                e.update(model_usage="lots") if e["type"] == "span.model_request_end" else None
            ),
            "'model_usage' must be an object",
        ),
        (
            lambda e: e.update(content=5) if e["type"] == "user.message" else None,
            "content must be a list",
        ),
        (
            lambda e: e.update(tool_use_id="nope") if e["type"] == "agent.tool_result" else None,
            "answers 'nope', which is no earlier tool use",
        ),
        (
            lambda e: e.update(input="x") if e["type"] == "agent.tool_use" else None,
            "object 'input'",
        ),
    ],
)
def test_wrong_typed_fields_give_a_located_error(
    shared: Path, tmp_path: Path, change, expected
) -> None:
    lines = _lines(shared)
    for method, payload in lines:
        if method.endswith("events.stream"):
            change(payload)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(v) for v in lines))
    with pytest.raises(ctxlab.TraceFormatError, match=expected) as info:
        ctxlab.load(path)
    assert info.value.source == str(path) and info.value.line is not None
    assert "event sevt_" in str(info.value)
