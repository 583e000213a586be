"""The engine's frames, files and CLI; SPEC parsing shared with sweeps."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict
from langchain_core.messages.utils import count_tokens_approximately

from ctxlab._cli.main import main
from ctxlab._replay.replay import replay
from ctxlab._replay.specs import format_size, parse_assignment, parse_size, parse_trigger
from ctxlab._trace import from_messages
from ctxlab.policies import KINDS, DeepAgents
from ctxlab.summarizers import Fixed
from tests.synthetic import make_messages, make_trace


def test_turn_frame_columns_and_baseline() -> None:
    trace = make_trace(60, seed=2, big=0.2)
    result = replay(trace, DeepAgents(window=30_000), Fixed("s"))
    frame = result.turns
    assert frame.columns[:3] == ["turn", "position", "context_tokens"]
    assert {f"{k}_tokens" for k in KINDS} <= set(frame.columns)
    assert frame.height == len(trace.turns)
    for row, turn in zip(frame.iter_rows(named=True), trace.turns, strict=True):
        expected = count_tokens_approximately(trace.messages[: turn.position], tools=trace.tools)
        assert row["baseline_tokens"] == expected
        assert row["context_tokens"] <= row["baseline_tokens"]
    # without scaling the kinds add up to the total
    kinds = sum(frame[f"{k}_tokens"] for k in KINDS)
    assert (kinds == frame["context_tokens"]).all()


def test_events_frame_and_files_are_byte_exact() -> None:
    trace = make_trace(120, fmt="anthropic", seed=3, big=0.2)
    result = replay(trace, DeepAgents(window=30_000), Fixed("s"))
    events = result.events
    assert set(events["kind"]) >= {"offload_tool_result", "summarize"}
    by_id = {m.tool_call_id: m for m in trace.messages if isinstance(m, ToolMessage)}
    for row in events.filter(events["kind"] == "offload_tool_result").iter_rows(named=True):
        [position] = row["messages"]
        original = trace.messages[position]
        assert by_id[original.tool_call_id] is original
        text = (
            original.content
            if isinstance(original.content, str)
            else "\n".join(b["text"] for b in original.content)
        )
        assert result.file_bytes(row["file_path"]) == text.encode("utf-8")
    history = [p for p in result.files if p.startswith("/conversation_history/session_")]
    assert len(history) == 1
    assert (
        result.files[history[0]].count("## Summarized at ") == (events["kind"] == "summarize").sum()
    )


def test_offload_after_the_last_call_has_no_turn() -> None:
    msgs = [
        HumanMessage("go"),
        AIMessage("", tool_calls=[{"name": "execute", "args": {}, "id": "c1"}]),
        ToolMessage("x" * 90_000, tool_call_id="c1", name="execute"),
    ]
    result = replay(from_messages(msgs), DeepAgents(window=None), Fixed("s"))
    assert [(e.kind, e.turn) for e in result.event_list] == [("offload_tool_result", None)]


def test_size_specs() -> None:
    assert parse_size("fraction:0.85") == ("fraction", 0.85)
    assert parse_size("tokens:170000") == ("tokens", 170000)
    assert parse_size("messages:6") == ("messages", 6)
    assert parse_size("0.25") == ("fraction", 0.25)
    assert parse_size("170000") == ("tokens", 170000)
    assert parse_trigger("tokens:4000&messages:10,fraction:0.9") == [
        {"tokens": 4000, "messages": 10},
        ("fraction", 0.9),
    ]
    assert format_size(parse_trigger("tokens:4000&messages:10,fraction:0.9")) == (
        "tokens:4000&messages:10,fraction:0.9"
    )
    assert parse_trigger("none") is None
    assert parse_assignment("keep=messages:6") == ("keep", ("messages", 6))
    assert parse_assignment("max-output-tokens=8000") == ("max_output_tokens", 8000)
    assert parse_assignment("tools=deepagents") == ("tools", "deepagents")
    assert parse_assignment('truncate_args_settings={"trigger": ["messages", 5]}') == (
        "truncate_args_settings",
        {"trigger": ["messages", 5]},
    )
    for bad in ("furlongs:3", "messages:2.5", "-1", "x"):
        with pytest.raises(ValueError):
            parse_size(bad)


@pytest.fixture
def trace_file(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(messages_to_dict(make_messages(80, seed=9, big=0.2))))
    return path


def test_cli_jsonl_matches_the_api(trace_file, tmp_path, capsys) -> None:
    summary = tmp_path / "summary.txt"
    summary.write_text("fixed summary")
    code = main(
        [
            "replay",
            str(trace_file),
            "--policy",
            "deepagents",
            "--window",
            "30000",
            "--trigger",
            "0.25",
            "--keep",
            "messages:6",
            "--set",
            "max_output_tokens=2000",
            "--summary-text-file",
            str(summary),
            "--format",
            "jsonl",
        ]
    )
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    from ctxlab._ingest.load import load

    [trace] = load(trace_file)
    api = replay(
        trace,
        DeepAgents(
            window=30_000, trigger=("fraction", 0.25), keep=("messages", 6), max_output_tokens=2000
        ),
        Fixed("fixed summary"),
    )
    assert [(r["turn"], r["context_tokens"]) for r in lines] == [
        (c.turn, c.context_tokens) for c in api.calls
    ]
    kinds = {e["kind"] for r in lines for e in r["events"]}
    assert kinds >= {"summarize", "offload_tool_result"}
    assert kinds <= {
        "offload_tool_result",
        "offload_human_message",
        "truncate_args",
        "summarize",
        "tail_clip",
        "overflow_error",
    }


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_cli_other_formats(trace_file, capsys, fmt) -> None:
    assert (
        main(["replay", str(trace_file), "--stress", "0.2", "--window", "60000", "--format", fmt])
        == 0
    )
    out = capsys.readouterr().out
    assert ("summarize" in out) if fmt == "table" else out.startswith("turn,position,")


def test_cli_bad_spec_is_exit_2(trace_file, capsys) -> None:
    assert main(["replay", str(trace_file), "--trigger", "furlongs:3"]) == 2
    assert "furlongs" in capsys.readouterr().err
