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


def _count_openhands_resolver(path: Path) -> list[dict[str, int]]:
    """openhands-resolver lines: one call per agent action (every action but the first,
    the user's message); messages = every action and observation; calls = `metrics.costs`."""
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for text in lines:
            line = json.loads(text)
            actions = [e for e in line["history"] if "action" in e]
            observations = [e for e in line["history"] if "observation" in e]
            assert len(line["metrics"]["costs"]) == len(actions) - 1
            out.append({"turns": len(actions) - 1, "messages": len(actions) + len(observations)})
    return out


CORPUS = {path: _count_any_agent for path in sorted((DATA / "any-agent").glob("*.json.gz"))}
RESOLVER = DATA / "openhands-resolver" / "output.jsonl.gz"


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


def test_openhands_resolver_output_loads_with_the_counts_read_directly() -> None:
    expected = _count_openhands_resolver(RESOLVER)
    traces = ctxlab.load(RESOLVER)
    assert [t.trace_id for t in traces] == ["neubig/pr-viewer#5", "neubig/pr-viewer#1"]
    assert [{"turns": len(t.turns), "messages": len(t.messages)} for t in traces] == expected
    first = traces[0]
    assert first.format == "openhands-legacy"
    assert "<execute_bash>\ntouch LICENSE\n</execute_bash>" in first.messages[1].content
    assert first.messages[2].content.startswith("OBSERVATION:")
    assert all(t.inputs[-1] is not None for t in first.turns)


def test_the_corpus_table_in_the_docs_holds_the_counts_read_directly() -> None:
    """docs/formats.md's corpus rows say what the stdlib scripts above find."""
    docs = (DATA.parents[1] / "docs" / "formats.md").read_text()
    for path, count in CORPUS.items():
        row = next(line for line in docs.splitlines() if f"any-agent/{path.name} |" in line)
        cells = [c.strip() for c in row.strip("|").split("|")]
        expected = count(path)
        assert cells[4:7] == [
            str(expected["turns"]),
            str(expected["messages"]),
            f"{expected['input_tokens']:,}",
        ]
