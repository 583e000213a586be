"""Inspect AI logs: the real browser EvalLog, synthetic `.eval` zips, compactions, bad files."""

from __future__ import annotations

import copy
import gzip
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab import policies
from ctxlab._errors import TraceFormatError
from ctxlab._messages import is_summary

BROWSER = "real-traces/inspect-ai-log/2025-05-12T20-27-36-04-00_browser.json.gz"

# ----------------------------------------------------------------------------- the real log


@pytest.fixture
def browser(shared: Path) -> Path:
    return shared / "data" / BROWSER


def test_real_browser_log_counts(browser: Path) -> None:
    traces = ctxlab.load(browser)
    assert len(traces) == 1
    trace = traces[0]
    assert trace.format == "inspect-ai"
    assert trace.trace_id == "browser:ZB2vu5GNujYaBdPSReCeop:1:1"
    assert len(trace.messages) == 10
    assert [m.type for m in trace.messages] == ["human"] + ["ai", "tool"] * 4 + ["ai"]
    assert len(trace.turns) == 5
    assert [t.position for t in trace.turns] == [1, 3, 5, 7, 9]
    assert [len(t.inputs) for t in trace.turns] == [1, 3, 5, 7, 9]
    assert trace.subagents == [] and trace.harness_calls == [] and trace.compactions == []
    assert trace.recorded_compactions == []
    # usage per call, as recorded (OpenAI: input_tokens already holds the cached part)
    assert [t.input_tokens for t in trace.turns] == [1124, 1568, 2732, 3896, 5915]
    assert [t.output_tokens for t in trace.turns] == [23, 17, 17, 17, 207]
    assert [t.cache_read_tokens for t in trace.turns] == [0, 1024, 1536, 2688, 3840]
    assert {t.cache_write_tokens for t in trace.turns} == {None}
    assert trace.recorded_input_tokens == 15235  # stats.model_usage input_tokens
    assert {t.model for t in trace.turns} == {"gpt-4o-mini-2024-07-18"}
    assert trace.provider == "openai"
    assert trace.turns[0].started_at == "2025-05-12T20:27:38.462180-04:00"
    assert len(trace.tools) == 8 and trace.tools[0]["name"] == "web_browser_go"
    assert trace.notes == []
    # every turn's output is the next history message; the last call's input is 9 messages
    for turn in trace.turns:
        assert trace.messages[turn.position] is turn.output
        assert list(turn.inputs) == trace.messages[: turn.position]


def test_real_browser_log_resolves_attachments(browser: Path) -> None:
    trace = ctxlab.load(browser)[0]
    doc = json.loads(gzip.decompress(browser.read_bytes()))
    sample = doc["samples"][0]
    texts = [m.content for m in trace.messages] + [json.dumps(trace.tools)]
    assert not any("attachment://" in str(t) for t in texts)
    assert trace.messages[0].content == sample["input"]
    assert (
        trace.tools[0]["description"] == sample["attachments"]["05e6f13a0b7e95be75a908233b3b5052"]
    )
    # the history is the sample's own final message list, content for content
    assert [m.content for m in trace.messages] == [m["content"] for m in sample["messages"]]
    tool_ids = [m.tool_call_id for m in trace.messages if isinstance(m, ToolMessage)]
    call_ids = [c["id"] for m in trace.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert tool_ids == call_ids and len(call_ids) == 4


@pytest.mark.parametrize("name", ["deepagents", "inspect-edit"])
def test_real_browser_log_replays(browser: Path, name: str) -> None:
    trace = ctxlab.load(browser)[0]
    replay = ctxlab.replay(trace, policies.get(name))
    assert len(replay.calls) == 5
    assert replay.turns.height == 5


# ----------------------------------------------------------------------------- logs Inspect wrote

INSPECT_LOGS = Path(__file__).parent / "data" / "inspect_ai"
"""`.eval` logs the real `inspect_ai` 0.3.285 wrote (zstd members, pooled inputs), made by
make_logs.py there: its `react` agent on a scripted mock model under each compaction strategy."""


PRE = [4532, 5533, 6534, 7535, 8536, 9537, 10563, 11564]
"""`tokens_before` of the eight compactions, as Inspect recorded them."""


@pytest.mark.parametrize(
    ("strategy", "kind", "pre_tokens", "harness"),
    [
        ("none", None, [], 0),
        ("summary", "summarize", PRE, 8),
        ("edit", "clear_tool_uses", PRE, 0),
        ("trim", "trim", PRE, 0),
    ],
)
def test_logs_inspect_wrote(
    strategy: str, kind: str | None, pre_tokens: list, harness: int
) -> None:
    (trace,) = ctxlab.load(INSPECT_LOGS / f"react-{strategy}.eval")
    # whatever the strategy sent, the full history is the one conversation
    assert len(trace.messages) == 27
    assert "".join(m.type[0] for m in trace.messages) == "sh" + "at" * 12 + "a"
    assert [t.position for t in trace.turns] == list(range(2, 27, 2))
    assert trace.recorded_input_tokens == 78299  # sum of 17 + 1001 * i over 13 calls
    assert sum(t.cache_read_tokens for t in trace.turns) == 78000
    assert len(trace.harness_calls) == harness  # CompactionSummary's own summariser calls
    assert [c.pre_tokens for c in trace.compactions] == pre_tokens
    assert {c.kind for c in trace.compactions} == ({kind} if kind else set())
    assert {c.trigger for c in trace.compactions} <= {"auto"}
    compacted = [t.index for t in trace.turns if t.compacted]
    assert (
        compacted
        == [c.turn for c in trace.compactions]
        == ([] if kind is None else list(range(5, 13)))
    )
    assert len(trace.inserted) == (8 if strategy == "summary" else 0)
    if strategy == "summary":
        assert trace.compactions[0].summary is not None
        assert "Summary 0: ran ls." in trace.compactions[0].summary
        assert [len(t.inputs) for t in trace.turns[5:]] == [3] * 8
    preset = "inspect-edit" if kind is None else f"inspect-{strategy}"
    for name in ("deepagents", preset):
        assert len(ctxlab.replay(trace, policies.get(name)).calls) == 13


def test_log_inspect_wrote_with_a_subagent_and_a_grader() -> None:
    (trace,) = ctxlab.load(INSPECT_LOGS / "react-subagent.eval")
    assert [m.type for m in trace.messages] == ["system", "human"] + ["ai", "tool"] * 2 + ["ai"]
    assert len(trace.turns) == 3 and trace.recorded_input_tokens == 1765
    # model_graded_qa's grader runs in the scorer span: a harness call, not a turn
    assert [h.output.text for h in trace.harness_calls] == ["GRADE: C"]
    (grader,) = trace.harness_calls
    assert grader.name == "scorer"
    share = grader.input_tokens / (grader.input_tokens + trace.recorded_input_tokens)
    (note,) = [n for n in trace.notes if "scorer model calls" in n]
    assert note.startswith(f"1 scorer model calls (mockllm/model: {grader.input_tokens:,} input")
    assert f"{share:.0%} of the sample's input tokens" in note
    (sub,) = trace.subagents
    (researcher_call,) = [
        c for m in trace.messages if isinstance(m, AIMessage) for c in m.tool_calls
    ][:1]
    assert researcher_call["name"] == "researcher"
    assert sub.parent_tool_call_id == researcher_call["id"]
    assert sub.parent_trace_id == trace.trace_id
    assert sub.trace_id == f"{trace.trace_id}/{researcher_call['id']}"
    assert [m.type for m in sub.messages] == ["system", "human", "ai", "tool", "ai"]
    assert sub.system_prompt is not None and "You research." in sub.system_prompt
    assert len(sub.turns) == 2 and sub.recorded_input_tokens == 1166
    assert trace.summary()["subagents"] == 1


def test_scorer_calls_load_as_traces_of_their_own() -> None:
    """`ctxlab.harness_traces(path, "scorer")`: the grader's call, as the log records it, is a
    one-call trace beside the agent's, replayable and billed like any trace."""
    path = INSPECT_LOGS / "react-subagent.eval"
    (trace,) = ctxlab.load(path)
    (grader,) = trace.harness_calls
    (own,) = ctxlab.harness_traces(path, "scorer")
    assert own.trace_id == f"{trace.trace_id}:scorer:0"
    assert own.parent_trace_id == trace.trace_id and own.format == "inspect-ai"
    assert own.messages == [*grader.inputs, grader.output]
    (turn,) = own.turns
    assert (turn.position, turn.input_tokens) == (len(grader.inputs), grader.input_tokens)
    assert turn.output is not None and turn.output.text == "GRADE: C"
    # the grader re-reads the agent's answer: the submitted "done" is in its prompt
    assert "done" in own.messages[-2].text
    assert ctxlab.harness_traces(trace, "summary") == []
    assert [t.trace_id for t in ctxlab.harness_traces(trace)] == [own.trace_id]
    assert len(ctxlab.replay(own, "deepagents").calls) == 1


# ----------------------------------------------------------------------------- synthetic logs


def msg(role: str, content: Any, mid: str, **extra: Any) -> dict[str, Any]:
    return {"id": mid, "role": role, "content": content, **extra}


def call(cid: str, fn: str, **args: Any) -> dict[str, Any]:
    return {"id": cid, "function": fn, "arguments": args}


def model_event(
    inputs: list[dict[str, Any]],
    output: dict[str, Any],
    usage: dict[str, Any] | None = None,
    *,
    model: str = "anthropic/claude-sonnet-4-5",
    tools: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "event": "model",
        "timestamp": "2026-01-01T00:00:00+00:00",
        "model": model,
        "input": inputs,
        "tools": [{"name": "bash", "description": "run", "parameters": {}}]
        if tools is None
        else tools,
        "tool_choice": "auto",
        "config": {"max_tokens": 4096},
        "output": {
            "model": model.split("/", 1)[1],
            "choices": [{"message": output, "stop_reason": "stop"}],
            "usage": usage or {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        },
        **extra,
    }


def evallog(samples: list[dict[str, Any]], task: str = "fix") -> dict[str, Any]:
    return {
        "version": 2,
        "status": "success",
        "eval": {"eval_id": "E1", "task": task, "model": "anthropic/claude-sonnet-4-5"},
        "plan": {},
        "samples": samples,
    }


SYS = msg("system", "You are an agent.", "s")
TASK = msg("user", "attachment://task", "u")
A1 = msg("assistant", "", "a1", tool_calls=[call("c1", "bash", cmd="attachment://cmd")])
T1 = msg("tool", "attachment://out1", "t1", tool_call_id="c1", function="bash")
A2 = msg(
    "assistant",
    [{"type": "reasoning", "reasoning": "think"}, {"type": "text", "text": "attachment://plan"}],
    "a2",
    tool_calls=[call("c2", "bash", cmd="ls")],
)
T2 = msg("tool", "", "t2", tool_call_id="c2", error={"type": "timeout", "message": "timed out"})
A3 = msg("assistant", "Done.", "a3")
ATTACH = {"task": "Fix the bug.", "cmd": "pytest -x", "out1": "FAILED " * 50, "plan": "Look."}


def agent_sample(sample_id: Any = 1, epoch: int = 1) -> dict[str, Any]:
    """Three calls, each extending the last; Anthropic usage (cache apart from input)."""
    usage = {
        "input_tokens": 3,
        "output_tokens": 7,
        "input_tokens_cache_read": 100,
        "input_tokens_cache_write": 20,
        "total_tokens": 130,
    }
    events = [
        {"event": "span_begin", "id": "solver", "type": "solver", "name": "react"},
        model_event([SYS, TASK], A1, usage, span_id="solver"),
        {"event": "tool", "id": "c1", "function": "bash", "span_id": "solver"},
        model_event([SYS, TASK, A1, T1], A2, span_id="solver"),
        model_event([SYS, TASK, A1, T1, A2, T2], A3, span_id="solver"),
    ]
    sample = {
        "id": sample_id,
        "epoch": epoch,
        "input": "attachment://task",
        "messages": [SYS, TASK, A1, T1, A2, T2, A3],
        "events": events,
        "attachments": ATTACH,
    }
    return copy.deepcopy(sample)  # tests edit their sample; the shared messages stay intact


def write_eval(path: Path, log: dict[str, Any], *, extra: dict[str, bytes] | None = None) -> Path:
    """An `.eval` zip as Inspect writes it: header, one member per sample, summaries."""
    header = {k: v for k, v in log.items() if k != "samples"}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": log["eval"]}))
        for sample in log["samples"]:
            name = f"samples/{sample['id']}_epoch_{sample['epoch']}.json"
            archive.writestr(name, json.dumps(sample))
        archive.writestr("summaries.json", json.dumps([{"id": s["id"]} for s in log["samples"]]))
        archive.writestr("header.json", json.dumps(header))
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return path


def test_eval_zip_multi_sample(tmp_path: Path) -> None:
    log = evallog([agent_sample(1, 1), agent_sample(1, 2), agent_sample("b", 1)])
    path = write_eval(tmp_path / "run.eval", log)
    with zipfile.ZipFile(path) as archive:  # members really are compressed
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in archive.infolist())
    traces = ctxlab.load(path)
    assert [t.trace_id for t in traces] == ["fix:E1:1:1", "fix:E1:1:2", "fix:E1:b:1"]
    trace = traces[0]
    assert [type(m) for m in trace.messages] == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]
    assert [t.position for t in trace.turns] == [2, 4, 6]
    assert trace.messages[1].content == "Fix the bug."
    assert trace.messages[2].tool_calls[0]["args"] == {"cmd": "pytest -x"}
    assert trace.messages[3].content == "FAILED " * 50
    assert trace.messages[4].content == [
        {"type": "reasoning", "reasoning": "think"},
        {"type": "text", "text": "Look."},
    ]
    assert trace.messages[5].content == "timed out" and trace.messages[5].status == "error"
    # Anthropic: the full prompt is input + cache read + cache write
    first = trace.turns[0]
    assert (first.input_tokens, first.cache_read_tokens, first.cache_write_tokens) == (123, 100, 20)
    assert first.output_tokens == 7 and first.max_output_tokens == 4096
    assert first.model == "claude-sonnet-4-5" and first.provider == "anthropic"
    assert trace.system_prompt == "You are an agent."
    assert trace.tools == [{"name": "bash", "description": "run", "parameters": {}}]
    assert trace.metadata["sample_id"] == 1 and trace.metadata["epoch"] == 1


def test_eval_zip_and_json_agree(tmp_path: Path) -> None:
    log = evallog([agent_sample()])
    (tmp_path / "a.json").write_text(json.dumps(log))
    a = ctxlab.load(tmp_path / "a.json")[0]
    b = ctxlab.load(write_eval(tmp_path / "b.eval", log))[0]
    assert a.messages == b.messages and a.turns == b.turns


def test_eval_zip_without_header_reads_the_journal(tmp_path: Path) -> None:
    log = evallog([agent_sample()])
    path = tmp_path / "running.eval"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": log["eval"]}))
        archive.writestr("samples/1_epoch_1.json", json.dumps(agent_sample()))
    assert len(ctxlab.load(path)[0].turns) == 3


def test_pooled_inputs_and_nested_attachments(tmp_path: Path) -> None:
    """Pooled logs keep each message once in `events_data.messages`; calls hold ranges."""
    sample = agent_sample()
    image = {"type": "image", "image": "attachment://img", "detail": "low"}
    task = msg("user", [{"type": "text", "text": "attachment://task"}, image], "u")
    sample["events_data"] = {"messages": [SYS, task, A1, T1, A2, T2], "calls": []}
    sample["attachments"] = {**ATTACH, "img": "data:image/png;base64,AAAA"}
    sample["messages"][1] = task
    models = [e for e in sample["events"] if e["event"] == "model"]
    for event, refs in zip(models, [[[0, 2]], [[0, 3], [3, 4]], [[0, 6]]], strict=True):
        event["input"], event["input_refs"] = [], refs
    path = tmp_path / "pooled.json"
    path.write_text(json.dumps(evallog([sample])))
    trace = ctxlab.load(path)[0]
    assert trace.messages[1].content == [
        {"type": "text", "text": "Fix the bug."},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
    ]
    assert [len(t.inputs) for t in trace.turns] == [2, 4, 6]
    assert trace.turns[2].compacted is False


def test_openai_cache_inside_input(tmp_path: Path) -> None:
    sample = agent_sample()
    usage = {
        "input_tokens": 500,
        "output_tokens": 5,
        "total_tokens": 505,
        "input_tokens_cache_read": 400,
    }
    sample["events"][1] = model_event([SYS, TASK], A1, usage, model="openai/gpt-4o")
    path = tmp_path / "o.json"
    path.write_text(json.dumps(evallog([sample])))
    turn = ctxlab.load(path)[0].turns[0]
    assert (turn.input_tokens, turn.cache_read_tokens, turn.provider) == (500, 400, "openai")


def summary_text(body: str) -> str:
    return (
        "[CONTEXT COMPACTION SUMMARY]\n\nThe following is a summary of work completed on this "
        f"task so far:\n\n<previous_summary>\n{body}\n</previous_summary>\n\n"
        "Please continue working on this task from where you left off."
    )


def compacted_sample() -> dict[str, Any]:
    """Inspect's CompactionSummary: the summariser call, a compaction event, then a call that
    sees system + task + summary; T2 reached no call (the summary absorbed it)."""
    a2 = msg("assistant", "", "a2", tool_calls=[call("c2", "bash", cmd="ls")])
    t2 = msg("tool", "src/", "t2", tool_call_id="c2", function="bash")
    summary = msg(
        "user", summary_text("Ran pytest; listed src."), "sum", metadata={"summary": True}
    )
    prompt = msg("user", "You are a helpful AI assistant tasked with summarizing.", "p")
    said = "<analysis>x</analysis>\n<summary>\nRan pytest; listed src.\n</summary>"
    a4 = msg("assistant", "", "a4", tool_calls=[call("c4", "bash", cmd="cat src/a.py")])
    t4 = msg("tool", "print(1)", "t4", tool_call_id="c4", function="bash")
    events = [
        model_event([SYS, TASK], A1),
        model_event([SYS, TASK, A1, T1], a2),
        {"event": "tool", "id": "c2", "function": "bash"},
        model_event([SYS, TASK, A1, T1, a2, t2, prompt], msg("assistant", said, "x"), tools=[]),
        {
            "event": "compaction",
            "timestamp": "2026-01-01T00:01:00+00:00",
            "type": "summary",
            "source": "inspect",
            "tokens_before": 9000,
            "tokens_after": 800,
            "metadata": {"strategy": "CompactionSummary"},
        },
        model_event([SYS, TASK, summary], a4),
        model_event([SYS, TASK, summary, a4, t4], A3),
        {"event": "span_begin", "id": "sc", "type": "scorer", "name": "model_graded_qa"},
        model_event([msg("user", "Grade: Done.", "g")], msg("assistant", "C", "gr"), span_id="sc"),
    ]
    return {
        "id": 7,
        "epoch": 1,
        "input": "attachment://task",
        "messages": [SYS, TASK, A1, T1, a2, t2, summary, a4, t4, A3],
        "events": events,
        "attachments": ATTACH,
    }


def test_recorded_summary_compaction(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(evallog([compacted_sample()])))
    trace = ctxlab.load(path)[0]
    assert [m.id for m in trace.messages] == ["s", "u", "a1", "t1", "a2", "t2", "a4", "t4", "a3"]
    assert [t.position for t in trace.turns] == [2, 4, 6, 8]
    assert [t.compacted for t in trace.turns] == [False, False, True, False]
    assert trace.recorded_compactions == [2]
    (event,) = trace.compactions
    assert (event.turn, event.kind, event.trigger) == (2, "summarize", "auto")
    assert (event.pre_tokens, event.post_tokens) == (9000, 800)
    assert event.summary == summary_text("Ran pytest; listed src.")
    assert event.started_at == "2026-01-01T00:01:00+00:00"
    assert len(trace.inserted) == 1 and is_summary(trace.inserted[0])
    # the summariser and the scorer's grader are harness calls, not turns
    assert [len(h.inputs) for h in trace.harness_calls] == [7, 1]
    replay = ctxlab.replay(trace, policies.get("inspect-summary"))
    assert len(replay.calls) == 4


def test_recorded_edit_compaction(tmp_path: Path) -> None:
    """CompactionEdit clears an old tool result in place (same id): the history keeps the
    original, and the call that saw the cleared one is the compaction point."""
    cleared = {**T1, "content": "(Tool result removed)"}
    a2 = msg("assistant", "", "a2", tool_calls=[call("c2", "bash", cmd="ls")])
    t2 = msg("tool", "src/", "t2", tool_call_id="c2", function="bash")
    sample = agent_sample()
    sample["events"] = [
        model_event([SYS, TASK], A1),
        model_event([SYS, TASK, A1, T1], a2),
        {"event": "compaction", "type": "edit", "tokens_before": 5000, "tokens_after": 1200},
        model_event([SYS, TASK, A1, cleared, a2, t2], A3),
    ]
    sample["messages"] = [SYS, TASK, A1, T1, a2, t2, A3]
    path = tmp_path / "e.json"
    path.write_text(json.dumps(evallog([sample])))
    trace = ctxlab.load(path)[0]
    assert trace.messages[3].content == "FAILED " * 50
    assert trace.turns[2].inputs[3].content == "(Tool result removed)"
    assert [t.compacted for t in trace.turns] == [False, False, True]
    assert [(c.turn, c.kind, c.pre_tokens, c.summary) for c in trace.compactions] == [
        (2, "clear_tool_uses", 5000, None)
    ]
    for name in ("deepagents", "inspect-edit"):
        assert len(ctxlab.replay(trace, policies.get(name)).calls) == 3


def test_grader_role_and_subagent(tmp_path: Path) -> None:
    sample = agent_sample()
    sub_task = msg("user", "Find the file.", "su")
    sub_out = msg("assistant", "It is a.py", "so")
    sample["events"][2:2] = [
        {
            "event": "span_begin",
            "id": "tspan",
            "parent_id": "solver",
            "type": "tool",
            "name": "bash",
        },
        {"event": "span_begin", "id": "agent", "parent_id": "tspan", "type": "agent", "name": "x"},
        model_event([sub_task], sub_out, span_id="agent"),
    ]
    sample["events"].append(
        model_event([msg("user", "Is it right?", "q")], msg("assistant", "yes", "y"), role="grader")
    )
    path = tmp_path / "s.json"
    path.write_text(json.dumps(evallog([sample])))
    trace = ctxlab.load(path)[0]
    assert len(trace.turns) == 3
    assert [h.name for h in trace.harness_calls] == ["grader"]
    (sub,) = trace.subagents
    assert sub.parent_trace_id == trace.trace_id and sub.parent_tool_call_id == "c1"
    assert sub.trace_id == f"{trace.trace_id}/c1"
    assert [m.content for m in sub.messages] == ["Find the file.", "It is a.py"]
    assert trace.summary()["subagents"] == 1


def test_nested_subagents_with_spans(tmp_path: Path) -> None:
    """A subagent that itself runs a subagent: each trace under the one that called it."""
    sample = agent_sample()
    inner_call = call("c9", "helper", q="x")
    sample["events"][2:2] = [
        {"event": "span_begin", "id": "t1", "parent_id": "solver", "type": "tool", "name": "bash"},
        {"event": "tool", "id": "c1", "function": "bash", "span_id": "solver"},
        {"event": "span_begin", "id": "ag1", "parent_id": "t1", "type": "agent", "name": "a"},
        model_event(
            [msg("user", "outer", "o1")],
            msg("assistant", "", "o2", tool_calls=[inner_call]),
            span_id="ag1",
        ),
        {"event": "span_begin", "id": "t2", "parent_id": "ag1", "type": "tool", "name": "helper"},
        {"event": "tool", "id": "c9", "function": "helper", "span_id": "ag1"},
        {"event": "span_begin", "id": "ag2", "parent_id": "t2", "type": "agent", "name": "b"},
        model_event([msg("user", "inner", "i1")], msg("assistant", "ok", "i2"), span_id="ag2"),
    ]
    del sample["events"][10]  # the plain tool event of c1 above replaces it
    path = tmp_path / "n.json"
    path.write_text(json.dumps(evallog([sample])))
    trace = ctxlab.load(path)[0]
    (outer,) = trace.subagents
    assert outer.parent_tool_call_id == "c1" and outer.messages[0].content == "outer"
    (inner,) = outer.subagents
    assert inner.parent_tool_call_id == "c9" and inner.parent_trace_id == outer.trace_id
    assert inner.messages[0].content == "inner"
    assert trace.summary()["subagents"] == 2


def test_subagent_events_nested_in_tool_events(tmp_path: Path) -> None:
    """Logs from before spans keep a subagent's events inside its tool event."""
    sample = agent_sample()
    sample["events"] = [e for e in sample["events"] if e["event"] != "span_begin"]
    sub_call = model_event([msg("user", "Look around.", "l")], msg("assistant", "Seen.", "m"))
    sample["events"][1]["events"] = [{"event": "step", "action": "begin"}, sub_call]
    path = tmp_path / "old-sub.json"
    path.write_text(json.dumps(evallog([sample])))
    trace = ctxlab.load(path)[0]
    assert len(trace.turns) == 3
    (sub,) = trace.subagents
    assert sub.parent_tool_call_id == "c1" and [m.text for m in sub.messages] == [
        "Look around.",
        "Seen.",
    ]
    sample["events"][1]["events"][1]["input"] = [{"role": "robot"}]
    path.write_text(json.dumps(evallog([sample])))
    assert "event 1 (tool).events[1] (model).input[0].role" in load_error(path)


def test_sample_without_events_falls_back_to_messages(tmp_path: Path) -> None:
    sample = agent_sample()
    del sample["events"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(evallog([sample])))
    trace = ctxlab.load(path)[0]
    assert len(trace.messages) == 7 and len(trace.turns) == 3
    assert trace.recorded_input_tokens is None
    assert len(trace.notes) == 1 and "no model events" in trace.notes[0]


def test_legacy_transcript_and_missing_usage(tmp_path: Path) -> None:
    """Logs before Inspect 0.3.50 keep events and attachments under `transcript`."""
    sample = agent_sample()
    events, attachments = sample.pop("events"), sample.pop("attachments")
    for event in events:
        if event["event"] == "model":
            del event["output"]["usage"]
    sample["transcript"] = {"events": events, "content": attachments}
    path = tmp_path / "legacy.json"
    path.write_text(json.dumps(evallog([sample])))
    trace = ctxlab.load(path)[0]
    assert len(trace.turns) == 3 and trace.messages[1].content == "Fix the bug."
    assert trace.recorded_input_tokens is None
    assert trace.notes == ["The log records no token usage for this sample's model calls."]


def test_directory_with_json_and_eval(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(evallog([agent_sample()], task="a")))
    write_eval(tmp_path / "b.eval", evallog([agent_sample(), compacted_sample()], task="b"))
    traces = ctxlab.load(tmp_path)
    assert sorted(t.trace_id for t in traces) == ["a:E1:1:1", "b:E1:1:1", "b:E1:7:1"]
    assert traces.errors == []


# ----------------------------------------------------------------------------- bad files


def load_error(path: Path) -> str:
    with pytest.raises(TraceFormatError) as info:
        ctxlab.load(path)
    assert str(path) in str(info.value)
    return str(info.value)


def bad(tmp_path: Path, edit: Any) -> str:
    sample = agent_sample()
    edit(sample)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(evallog([sample])))
    return load_error(path)


def test_bad_usage_type_is_located(tmp_path: Path) -> None:
    def edit(s: dict[str, Any]) -> None:
        s["events"][3]["output"]["usage"]["input_tokens"] = "many"

    text = bad(tmp_path, edit)
    assert "sample 1 (epoch 1)" in text and "event 3 (model)" in text
    assert "input_tokens" in text and "expected an integer" in text and "got str" in text


def test_unresolved_attachment_is_located(tmp_path: Path) -> None:
    text = bad(tmp_path, lambda s: s["attachments"].pop("cmd"))
    assert "event 1 (model).output.choices[0].message.tool_calls[0].arguments" in text
    assert "attachment://cmd" in text


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda s: s["events"][3]["input"][3].pop("tool_call_id"), "input[3].tool_call_id"),
        (lambda s: s["events"][3]["input"][0].update(role="robot"), "input[0].role"),
        (lambda s: s["events"][4].update(output=[]), "event 4 (model).output"),
        (lambda s: s["events"][4]["input"].__setitem__(2, "hi"), "input[2]: expected a chat"),
        (lambda s: s["events"].__setitem__(2, 5), "event 2: expected an event object"),
        (lambda s: s.update(attachments=[]), "attachments: expected an object"),
        (
            lambda s: s["events"][4]["input"][1].update(content=[{"type": "text", "text": 3}]),
            "input[1].content[0].text",
        ),
        (
            lambda s: s["events"][4].update(input=[], input_refs=[[0, 9]]),
            "input_refs[0]",
        ),
    ],
)
def test_bad_fields_are_located(tmp_path: Path, edit: Any, expected: str) -> None:
    assert expected in bad(tmp_path, edit)


def test_orphan_tool_result_is_refused(tmp_path: Path) -> None:
    def edit(s: dict[str, Any]) -> None:
        s["events"][3]["input"][3]["tool_call_id"] = "nope"

    assert "tool result for call 'nope'" in bad(tmp_path, edit)


def test_log_without_samples(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps(evallog([])))
    assert "no samples" in load_error(path)


def test_other_zips_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "photos.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.txt", "hello")
    assert "not an Inspect AI log" in load_error(path)


def test_zip_bomb_is_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The members count against the one ceiling every container has."""
    sample = agent_sample()
    sample["attachments"]["pad"] = "0" * 200_000  # compresses to a few hundred bytes
    path = write_eval(tmp_path / "bomb.eval", evallog([sample]))
    assert path.stat().st_size < 20_000
    monkeypatch.setenv("CTXLAB_MAX_TRACE_BYTES", "100000")
    error = load_error(path)
    assert "exceeds 100,000 bytes" in error and "CTXLAB_MAX_TRACE_BYTES" in error


def test_corrupt_zip_members(tmp_path: Path) -> None:
    path = write_eval(tmp_path / "j.eval", evallog([]), extra={"samples/2_epoch_1.json": b"{x"})
    assert "'samples/2_epoch_1.json' is not valid JSON" in load_error(path)
    good = write_eval(tmp_path / "t.eval", evallog([agent_sample()])).read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(good[: len(good) // 2])
    assert "zip" in load_error(cut)
