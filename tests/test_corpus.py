"""The real files in tests/data (SOURCE.txt beside each) load with the counts a short script
finds by reading them directly, not through ctxlab.

Each `_count_*` function below reads one format's JSON with the standard library only and says
how many model calls, messages and recorded input tokens the file holds; ctxlab must agree.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import ctxlab

DATA = Path(__file__).resolve().parent / "data"


def _json(path: Path) -> object:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def _count_any_agent(path: Path) -> dict[str, int]:
    """any-agent: one call per `call_llm` span; messages = the first call's input messages, one
    answer per call, and one result per `execute_tool` span a later call saw (started before
    the last call: a final tool run no call read is not in any context)."""
    spans = _json(path)["spans"]
    calls = sorted(
        (s for s in spans if s["attributes"].get("gen_ai.operation.name") == "call_llm"),
        key=lambda s: s["start_time"],
    )
    tools = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "execute_tool"]
    seen = [s for s in tools if s["start_time"] < calls[-1]["start_time"]]
    inputs = json.loads(calls[0]["attributes"]["gen_ai.input.messages"])
    return {
        "turns": len(calls),
        "messages": len(inputs) + len(calls) + len(seen),
        "input_tokens": sum(
            int(s["attributes"].get("gen_ai.usage.input_tokens", 0)) for s in calls
        ),
    }


CORPUS = {path: _count_any_agent for path in sorted((DATA / "any-agent").glob("*.json.gz"))}


@pytest.mark.parametrize("path", sorted(CORPUS), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_file_loads_with_the_counts_read_directly(path: Path) -> None:
    expected = CORPUS[path](path)
    (trace,) = ctxlab.load(path)
    assert len(trace.turns) == expected["turns"]
    assert len(trace.messages) == expected["messages"]
    assert sum(t.input_tokens or 0 for t in trace.turns) == expected["input_tokens"]
    assert not any(
        "record no input messages" in note for note in trace.notes
    )  # rebuilt, and said so:
    assert any("any-agent" in note for note in trace.notes)


def test_any_agent_tool_results_answer_the_calls_that_asked() -> None:
    (trace,) = ctxlab.load(DATA / "any-agent" / "LANGCHAIN_trace.json.gz")
    kinds = [type(m).__name__ for m in trace.messages]
    assert kinds == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "AIMessage",
    ]
    asked = trace.messages[2].tool_calls[0]
    assert asked["name"] == "get_current_time" and asked["args"] == {"timezone": "America/New_York"}
    assert trace.messages[3].tool_call_id == asked["id"]
    assert "2025" in trace.messages[3].content
    # each later call saw the earlier answer and tool result
    assert [t.position for t in trace.turns] == [2, 4, 6, 7]
