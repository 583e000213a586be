"""Rebuilding one conversation from per-call inputs: compaction points, summaries, offloads."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.load import dumpd
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab

SYS = SystemMessage("You are a coding agent.")
H = HumanMessage("Fix the bug in app.py", id="h1")
AI1 = AIMessage("", id="a1", tool_calls=[{"name": "bash", "args": {"cmd": "pytest"}, "id": "c1"}])
FULL = "FAILED test_x\n" * 8000  # what the tool returned (112k chars)
STUB = "Tool result too large, the result of this tool call c1 was saved at /large_tool_results/c1"
T1_SENT = ToolMessage(STUB, tool_call_id="c1", name="bash", id="t1")
AI2 = AIMessage(
    "", id="a2", tool_calls=[{"name": "read_file", "args": {"path": "app.py"}, "id": "c2"}]
)
T2 = ToolMessage("def f(): pass", tool_call_id="c2", name="read_file", id="t2")
AI3 = AIMessage("Found it.", id="a3")
H2 = HumanMessage("Now add a test.", id="h2")
SUMMARY = HumanMessage(
    "You are in the middle of a conversation that has been summarized.\n\n<summary>x</summary>",
    additional_kwargs={"lc_source": "summarization"},
)
AI4 = AIMessage("Added.", id="a4")


def run(rid: str, parent: str | None, run_type: str, name: str, **fields: object) -> dict:
    return {
        "id": rid,
        "trace_id": "root",
        "parent_run_id": parent,
        "run_type": run_type,
        "name": name,
        "dotted_order": f"x.{rid}",
        **fields,
    }


def llm(rid: str, inputs: list, output: AIMessage, node: str = "model") -> list[dict]:
    gen = {"message": dumpd(output), "text": ""}
    return [
        run(f"n{rid}", "root", "chain", node),
        run(
            rid,
            f"n{rid}",
            "llm",
            "ChatAnthropic",
            inputs={"messages": [[dumpd(m) for m in inputs]]},
            outputs={"generations": [[gen]]},
            extra={"metadata": {"ls_provider": "anthropic", "ls_model_name": "claude-sonnet-4-5"}},
        ),
    ]


def export(tmp_path: Path) -> Path:
    runs = [run("root", None, "chain", "LangGraph", dotted_order="root")]
    runs += llm("1", [SYS, H], AI1)
    runs.append(
        run(
            "tool1",
            "root",
            "tool",
            "bash",
            extra={"tool_call_id": "c1"},
            outputs={"output": dumpd(ToolMessage(FULL, tool_call_id="c1", name="bash"))},
        )
    )
    runs += llm("2", [SYS, H, AI1, T1_SENT], AI2)
    runs += llm("3", [SYS, H, AI1, T1_SENT, AI2, T2], AI3)
    # The recorded harness summarised everything before H2: call 4 no longer extends call 3.
    runs += llm("4", [SYS, SUMMARY, AI3, H2], AI4)
    # A harness call elsewhere in the graph (a judge) is not a turn.
    runs += llm(
        "5", [SystemMessage("Grade this."), HumanMessage("Added.")], AIMessage("yes"), "judge"
    )
    for i, r in enumerate(runs):
        r["dotted_order"] = f"{i:04d}"
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(runs))
    return path


def test_compaction_point_summary_and_restored_offload(tmp_path: Path) -> None:
    (trace,) = ctxlab.load(export(tmp_path))
    assert [type(m).__name__ for m in trace.messages] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "HumanMessage",
        "AIMessage",
    ]
    assert trace.messages[7].id == "h2"  # new after the compaction point
    assert trace.recorded_compactions == [3]
    assert [t.position for t in trace.turns] == [2, 4, 6, 8]
    assert trace.inserted == [SUMMARY]
    # Full history holds what the tool returned; the as-sent input holds the stub.
    assert trace.messages[3].content == FULL
    assert trace.turns[1].inputs[-1].content == STUB
    assert trace.metadata["restored_tool_results"] == 1
    assert len(trace.harness_calls) == 1 and trace.harness_calls[0].output.text == "yes"
    assert trace.summary()["messages"] == 9 and trace.summary()["recorded_compactions"] == 1


def test_no_compaction_when_each_call_extends_the_last(tmp_path: Path) -> None:
    path = export(tmp_path)
    runs = [r for r in json.loads(path.read_text()) if r["id"] not in ("4", "n4")]
    path.write_text(json.dumps(runs))
    (trace,) = ctxlab.load(path)
    assert trace.recorded_compactions == [] and len(trace.turns) == 3 and trace.inserted == []
