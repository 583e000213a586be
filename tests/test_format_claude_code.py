"""Claude Code session transcripts: the real sessions in ../shared/data with exact counts, and
small synthetic files for what they lack (branches, microcompact, auto compaction, bad lines).

The ground truth of the real files is recomputed from their raw lines here (distinct
`message.id`s, the last line's usage of each) and checked against the numbers their SOURCE.txt
gives, so the reader is compared with an independent count, not with itself.
"""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

import ctxlab
from ctxlab._ingest.formats import claude_code, registry
from ctxlab._ingest.load import load_all
from ctxlab._replay.policies import catalog

COMPACTED = "real-traces/claude-code-session-compacted"
SESSION = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
SIDECHAINS = "real-traces/claude-code-session/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl.gz"


def _raw(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines() if line]


def _last_usage(lines: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Each API message's usage on its last line: the final count, not the stream start."""
    usage: dict[str, dict[str, int]] = {}
    for line in lines:
        if line.get("type") == "assistant":
            usage[line["message"]["id"]] = line["message"]["usage"]
    return usage


def _check_pairs(trace: ctxlab.Trace) -> None:
    """Every ToolMessage answers an earlier AIMessage tool call; outputs sit at `position`."""
    called: set[str] = set()
    for message in trace.messages:
        if isinstance(message, AIMessage):
            called.update(c["id"] for c in message.tool_calls)
        elif isinstance(message, ToolMessage):
            assert message.tool_call_id in called
    for turn in trace.turns:
        assert trace.messages[turn.position] is turn.output


# ----------------------------------------------------------------------------- real files


def test_compacted_session_ground_truth(shared: Path) -> None:
    folder = shared / "data" / COMPACTED
    raw = _raw(folder / f"{SESSION}.jsonl.gz")
    usage = _last_usage(raw)
    assert len(usage) == 217
    totals = {
        k: sum(u[k] for u in usage.values())
        for k in next(iter(usage.values()))
        if k.endswith("tokens")
    }
    assert (
        totals["input_tokens"],
        totals["cache_creation_input_tokens"],
        totals["cache_read_input_tokens"],
        totals["output_tokens"],
    ) == (242, 237_121, 16_553_628, 49_467)

    (trace,) = ctxlab.load(folder / f"{SESSION}.jsonl.gz")
    assert trace.format == "claude-code" and trace.trace_id == SESSION
    assert len(trace.turns) == 217
    assert [t.run_id for t in trace.turns] == list(usage)
    assert sum(t.cache_read_tokens or 0 for t in trace.turns) == 16_553_628
    assert sum(t.cache_write_tokens or 0 for t in trace.turns) == 237_121
    assert sum(t.output_tokens or 0 for t in trace.turns) == 49_467
    assert trace.recorded_input_tokens == 242 + 237_121 + 16_553_628
    # 242 tool results + 4 prompts + 2 isMeta lines + 217 model messages; the summary is apart.
    assert len(trace.messages) == 465
    assert sum(isinstance(m, ToolMessage) for m in trace.messages) == 242
    assert sum(isinstance(m, HumanMessage) for m in trace.messages) == 6
    models = [t.model for t in trace.turns]
    assert models.count("claude-opus-4-6") == 84
    assert models.count("claude-haiku-4-5-20251001") == 133
    assert trace.model == "claude-haiku-4-5-20251001"  # the model of the most calls
    assert any("2 models" in note for note in trace.notes)
    assert any("system prompt" in note for note in trace.notes)
    assert any("Tool schemas" in note for note in trace.notes)
    _check_pairs(trace)


def test_compacted_session_recorded_compaction(shared: Path) -> None:
    (trace,) = ctxlab.load(shared / "data" / COMPACTED / f"{SESSION}.jsonl.gz")
    (compaction,) = trace.compactions
    assert (compaction.kind, compaction.trigger, compaction.pre_tokens) == (
        "summarize",
        "manual",
        142_431,
    )
    assert compaction.turn == 138 and compaction.started_at == "2026-02-12T14:48:36.922Z"
    assert trace.recorded_compactions == [138]
    assert [t.index for t in trace.turns if t.compacted] == [138]
    (summary,) = trace.inserted
    assert compaction.summary == summary.text
    assert summary.text.startswith("This session is being continued from a previous conversation")
    assert all(m is not summary for m in trace.messages)
    # Before: every call saw the whole history; after: the summary, then what followed it.
    for turn in trace.turns[:138]:
        assert turn.inputs == tuple(trace.messages[: turn.position])
    after = trace.turns[138]
    assert after.inputs[0] is summary
    assert after.inputs[1:] == tuple(
        trace.messages[after.position - len(after.inputs) + 1 : after.position]
    )
    assert after.input_tokens == 45_263 and trace.turns[137].input_tokens == 141_787
    assert trace.turns[137].model == "claude-haiku-4-5-20251001"
    assert after.model == "claude-opus-4-6"


def test_compacted_session_reads_its_subagents_folder(shared: Path) -> None:
    folder = shared / "data" / COMPACTED
    (trace,) = ctxlab.load(folder / f"{SESSION}.jsonl.gz")
    (sub,) = trace.subagents
    assert sub.trace_id == f"{SESSION}/aac57f5" and sub.parent_trace_id == SESSION
    assert sub.parent_tool_call_id == "toolu_01Hf8v1Za7y4af8VUwSR4CXU"
    task = [
        c
        for m in trace.messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["id"] == sub.parent_tool_call_id
    ]
    assert task and task[0]["name"] == "Task"
    assert len(sub.turns) == 3 and sub.model == "claude-sonnet-4-5-20250929"
    raw_sub = _raw(folder / SESSION / "subagents" / "agent-aac57f5.jsonl.gz")
    assert [t.run_id for t in sub.turns] == list(_last_usage(raw_sub))
    _check_pairs(sub)
    # The summariser call is the harness's own: input = the context before the compaction
    # (150 user-side + 138 model messages) and the summary request.
    (call,) = trace.harness_calls
    assert call.position == -1 and call.model == "claude-opus-4-6"
    assert (call.input_tokens, call.cache_read_tokens, call.cache_write_tokens) == (
        3 + 17_842 + 121_689,
        17_842,
        121_689,
    )
    assert len(call.inputs) == 289
    assert call.inputs[:288] == tuple(trace.messages[:288])
    assert call.inputs[-1].text.startswith("Your task is to create a detailed summary")
    assert trace.compactions[0].summary is not None
    assert call.output is not None and "<analysis>" in call.output.text


def test_directory_load_does_not_repeat_subagent_files(shared: Path) -> None:
    folder = shared / "data" / COMPACTED
    traces = ctxlab.load(folder)
    assert not traces.errors
    (trace,) = traces
    assert len(trace.subagents) == 1 and len(trace.harness_calls) == 1
    assert sorted(Path(p).name for p in trace.metadata["agent_files"]) == [
        "agent-aac57f5.jsonl.gz",
        "agent-acompact-946d2b.jsonl.gz",
    ]


def test_subagent_file_alone_and_in_any_order(shared: Path) -> None:
    folder = shared / "data" / COMPACTED
    agent = folder / SESSION / "subagents" / "agent-aac57f5.jsonl.gz"
    (alone,) = ctxlab.load(agent)
    assert alone.parent_trace_id == SESSION and alone.parent_tool_call_id is None
    assert claude_code.ALONE in alone.notes and len(alone.turns) == 3
    both = load_all([agent, folder / f"{SESSION}.jsonl.gz"])
    assert [t.trace_id for t in both] == [SESSION]


def test_subagent_files_elsewhere_are_linked_to_their_session(shared: Path, tmp_path: Path) -> None:
    """Session and agent files side by side (not in `<session>/subagents/`): `link` attaches
    them, with the same result as the on-disk layout."""
    folder = shared / "data" / COMPACTED
    for path in [folder / f"{SESSION}.jsonl.gz", *(folder / SESSION / "subagents").iterdir()]:
        shutil.copy(path, tmp_path / path.name)
    (linked,) = ctxlab.load(tmp_path)
    (laid_out,) = ctxlab.load(folder)
    (sub,) = linked.subagents
    assert sub.parent_tool_call_id == laid_out.subagents[0].parent_tool_call_id
    assert claude_code.ALONE not in sub.notes
    (call,) = linked.harness_calls
    assert call.inputs == laid_out.harness_calls[0].inputs
    assert len(call.inputs) == 289


def test_inline_sidechains_are_task_subagents(shared: Path) -> None:
    path = shared / "data" / SIDECHAINS
    raw = _raw(path)
    assert len(_last_usage(raw)) == 170
    (trace,) = ctxlab.load(path)
    assert len(trace.turns) == 9 and len(trace.messages) == 23
    assert len(trace.subagents) == 5
    assert sum(len(t.turns) for t in trace.walk()) == 170
    task_ids = [
        c["id"]
        for m in trace.messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["name"] == "Task"
    ]
    assert sorted(s.parent_tool_call_id for s in trace.subagents) == sorted(task_ids)
    assert all(s.parent_trace_id == trace.trace_id for s in trace.subagents)
    calls = sum(
        len(m.tool_calls) for t in trace.walk() for m in t.messages if isinstance(m, AIMessage)
    )
    results = sum(isinstance(m, ToolMessage) for t in trace.walk() for m in t.messages)
    assert calls == results == 167
    usage = _last_usage(raw)
    by_id = {t.run_id: t for t in trace.walk() for t in t.turns}
    for message_id, recorded in usage.items():
        want = (
            recorded["input_tokens"]
            + recorded["cache_read_input_tokens"]
            + recorded["cache_creation_input_tokens"]
        )
        assert by_id[message_id].input_tokens == want
    assert trace.metadata["summaries"][0]["summary"] == (
        "Empty Repo Setup: CLAUDE.md Foundation Created"
    )
    for sub in trace.walk():
        _check_pairs(sub)


@pytest.mark.parametrize("relpath", [COMPACTED, SIDECHAINS])
@pytest.mark.parametrize("policy", ["claude-code", "deepagents"])
def test_real_sessions_replay(shared: Path, relpath: str, policy: str) -> None:
    (trace,) = ctxlab.load(shared / "data" / relpath)
    for part in trace.walk():
        result = ctxlab.replay(part, catalog.get(policy))
        assert result.turns.height == len(part.turns)
        assert result.turns["recorded_input_tokens"].to_list() == [
            t.input_tokens for t in part.turns
        ]


# ----------------------------------------------------------------------------- synthetic


def _entry(kind: str, uuid: str, parent: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "s1",
        "timestamp": f"2026-01-01T00:00:{len(uuid):02d}Z",
        **extra,
    }


def _user(uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    return _entry("user", uuid, parent, message={"role": "user", "content": content}, **extra)


def _usage(inp: int, out: int, read: int = 0, write: int = 0) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
    }


def _ai(
    uuid: str,
    parent: str | None,
    mid: str,
    block: dict[str, Any],
    usage: Any = None,
    model: str = "claude-sonnet-4-5",
) -> dict[str, Any]:
    message = {
        "id": mid,
        "model": model,
        "role": "assistant",
        "type": "message",
        "content": [block],
        "usage": usage or _usage(1, 1),
    }
    return _entry("assistant", uuid, parent, message=message)


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _call(call_id: str, name: str = "Bash", **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def _result(call_id: str, text: str) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": call_id, "content": text}]


def _write(tmp_path: Path, lines: list[Any], name: str = "s1.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _parallel_session() -> list[dict[str, Any]]:
    """One prompt; a message streamed over 3 lines with 2 parallel calls (the first result
    hangs off the first call's line, beside the chain); a final answer."""
    return [
        {"type": "summary", "summary": "Title", "leafUuid": "a4"},
        _user("u1", None, "list files"),
        _ai("a1", "u1", "m1", _text("Let me look."), _usage(5, 1, 100, 10)),
        _ai("a2", "a1", "m1", _call("t1", cmd="ls")),
        _user("r1", "a2", _result("t1", "x.py")),
        _ai("a3", "a2", "m1", _call("t2", cmd="pwd"), _usage(5, 42, 100, 10)),
        _user("r2", "a3", _result("t2", "/w")),
        {
            "type": "progress",
            "uuid": "p1",
            "parentUuid": "r2",
            "sessionId": "s1",
            "data": {"type": "hook_progress"},
        },
        _ai("a4", "p1", "m2", _text("Done."), _usage(2, 3, 120, 5)),
    ]


def test_streamed_fragments_merge_and_parallel_results_stay(tmp_path: Path) -> None:
    (trace,) = ctxlab.load(_write(tmp_path, _parallel_session()))
    assert [type(m).__name__ for m in trace.messages] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "AIMessage",
    ]
    first = trace.messages[1]
    assert [c["id"] for c in first.tool_calls] == ["t1", "t2"]
    assert [b["type"] for b in first.content] == ["text", "tool_use", "tool_use"]
    assert trace.messages[2].name == "Bash"
    t0, t1 = trace.turns
    # The last line's usage, not the first line's stream-start snapshot.
    assert (t0.input_tokens, t0.output_tokens, t0.cache_read_tokens, t0.cache_write_tokens) == (
        115,
        42,
        100,
        10,
    )
    assert first.usage_metadata["input_tokens"] == 115
    assert t1.inputs == tuple(trace.messages[:4]) and t1.position == 4
    assert t0.started_at == "2026-01-01T00:00:02Z"
    assert trace.metadata["summaries"] == [{"summary": "Title", "leaf_uuid": "a4"}]
    assert not any("branch" in n for n in trace.notes)


def test_other_branches_are_dropped_with_a_note(tmp_path: Path) -> None:
    lines = [
        _user("u1", None, "hi"),
        _ai("a1", "u1", "m1", _text("first answer")),
        _user("u2", "a1", "try again"),
        _ai("a2", "u1", "m2", _text("edited branch answer")),
        _user("u3", "a2", "thanks"),
        _ai("a3", "u3", "m3", _text("bye")),
    ]
    (trace,) = ctxlab.load(_write(tmp_path, lines))
    assert [m.text for m in trace.messages] == ["hi", "edited branch answer", "thanks", "bye"]
    assert len(trace.turns) == 2
    assert any("1 other branch" in n for n in trace.notes)


def test_auto_compaction_and_microcompact(tmp_path: Path) -> None:
    lines = [
        _user("u1", None, "go"),
        _ai("a1", "u1", "m1", _call("t1", cmd="cat big")),
        _user("r1", "a1", _result("t1", "BIG OUTPUT")),
        _ai("a2", "r1", "m2", _call("t2", cmd="cat other")),
        _user("r2", "a2", _result("t2", "OTHER")),
        _entry(
            "system",
            "mc",
            "r2",
            subtype="microcompact_boundary",
            microcompactMetadata={
                "trigger": "auto",
                "preTokens": 900,
                "tokensSaved": 300,
                "compactedToolIds": ["t1"],
            },
        ),
        _ai("a3", "mc", "m3", _text("noted")),
        _entry(
            "system",
            "cb",
            None,
            subtype="compact_boundary",
            logicalParentUuid="a3",
            compactMetadata={"trigger": "auto", "preTokens": 1500, "postTokens": 80},
        ),
        _user("sum", "cb", "This session is being continued... SUMMARY", isCompactSummary=True),
        _user("u2", "sum", "carry on", isMeta=True),
        _ai("a4", "u2", "m4", _text("ok"), model="claude-opus-4-6"),
        _ai("a5", "a4", "m5", _text("No response requested."), model="<synthetic>"),
    ]
    (trace,) = ctxlab.load(_write(tmp_path, lines))
    micro, full = trace.compactions
    assert (micro.kind, micro.turn, micro.pre_tokens, micro.post_tokens) == (
        "microcompact",
        2,
        900,
        600,
    )
    assert (full.kind, full.trigger, full.turn, full.pre_tokens, full.post_tokens) == (
        "summarize",
        "auto",
        3,
        1500,
        80,
    )
    assert full.summary == "This session is being continued... SUMMARY"
    assert [t.compacted for t in trace.turns] == [False, False, True, True]
    cleared = trace.turns[2].inputs[2]
    assert isinstance(cleared, ToolMessage) and cleared.text != "BIG OUTPUT"
    assert trace.messages[2].text == "BIG OUTPUT"  # the full history keeps the original
    assert [m.text for m in trace.turns[3].inputs] == [full.summary, "carry on"]
    # The full history holds every message; the summary is only in `inserted`.
    assert [m.text for m in trace.messages][-3:] == ["carry on", "ok", "No response requested."]
    assert len(trace.turns) == 4  # the <synthetic> message is no model call
    assert trace.model == "claude-sonnet-4-5"
    assert any("<synthetic>" in n for n in trace.notes)
    assert any("microcompact" in n for n in trace.notes)


def test_sniff_claims_only_claude_code_lines() -> None:
    lines = [(line, i) for i, line in enumerate(_parallel_session(), 1)]
    assert registry.detect(lines) is claude_code
    assert not claude_code.sniff([({"id": "r", "run_type": "llm"}, 1)])
    assert not claude_code.sniff([([{"role": "user", "content": "x"}], None)])
    assert not claude_code.sniff([("text", 1), (3, 2)])


BAD = {
    "bad JSON": ('{"type": "user", "uuid": , "x": 1}', 2, "malformed JSON"),
    "message not an object": (_entry("user", "u2", "a1", message=5), 2, "'message'"),
    "usage a string": (
        _entry("assistant", "u2", "a1", message={"id": "m", "content": [], "usage": "x"}),
        2,
        "'message.usage'",
    ),
    "usage count negative": (
        _ai("u2", "a1", "m9", _text("x"), {"input_tokens": -1}),
        2,
        "'message.usage.input_tokens'",
    ),
    "missing parent": (_user("u2", "nowhere", "hi"), 2, "'parentUuid': 'nowhere'"),
    "tool input neither an object nor text": (
        _entry(
            "assistant",
            "u2",
            "a1",
            message={
                "id": "m",
                "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": 5}],
            },
        ),
        2,
        "'message.content[0].input'",
    ),
    "orphan tool result": (_user("u2", "a1", _result("nope", "x")), 2, "'nope'"),
    "content a number": (_user("u2", "a1", 7), 2, "'message.content'"),
    "compact metadata wrong": (
        _entry(
            "system",
            "u2",
            "a1",
            subtype="compact_boundary",
            compactMetadata={"trigger": "auto", "preTokens": "many"},
        ),
        2,
        "'compactMetadata.preTokens'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_lines_raise_located_errors(tmp_path: Path, case: str) -> None:
    bad, line, field = BAD[case]
    head = [_ai("a1", None, "m1", _text("hello"))]
    text = json.dumps(head[0]) + "\n" + (bad if isinstance(bad, str) else json.dumps(bad)) + "\n"
    path = tmp_path / "bad.jsonl"
    path.write_text(text + json.dumps(_user("u3", "u2", "more")) + "\n")
    with pytest.raises(ctxlab.TraceFormatError) as caught:
        ctxlab.load(path)
    assert caught.value.source == str(path)
    assert caught.value.line == line
    assert field in str(caught.value)


def test_bad_session_in_a_directory_costs_only_itself(tmp_path: Path) -> None:
    _write(tmp_path, _parallel_session(), "good.jsonl")
    _write(tmp_path, [_user("u1", "gone", "hi")], "bad.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxlab.TraceLoadWarning)
        traces = ctxlab.load(tmp_path)
    assert [t.trace_id for t in traces] == ["s1"]
    assert [Path(e.source).name for e in traces.errors] == ["bad.jsonl"]


def _side(entry: dict[str, Any]) -> dict[str, Any]:
    return {**entry, "isSidechain": True}


def test_inline_sidechains_by_prompt_and_unlinked(tmp_path: Path) -> None:
    """Claude Code 1.x: two Task calls in one message, each subagent a sidechain of its own
    (one hanging off a main line); a third sidechain no Task call names."""
    lines = [
        _user("u1", None, "build it"),
        _ai("a1", "u1", "m1", _call("task1", "Task", prompt="write types", description="t")),
        _ai("a2", "a1", "m1", _call("task2", "Task", prompt="write ui", description="u")),
        _side(_user("s1", None, "write types")),
        _side(_ai("s2", "s1", "sm1", _call("b1", cmd="touch types.ts"))),
        _side(_user("s3", "s2", _result("b1", "ok"))),
        _side(_ai("s4", "s3", "sm2", _text("types done"))),
        _side(_user("x1", "a2", "write ui")),
        _side(_ai("x2", "x1", "xm1", _text("ui done"))),
        _side(_user("w1", None, "Warmup")),
        _side(_ai("w2", "w1", "wm1", _text("ready"))),
        _user("r1", "a1", _result("task1", "types done")),
        _user("r2", "a2", _result("task2", "ui done")),
        _ai("a3", "r2", "m2", _text("all done")),
    ]
    (trace,) = ctxlab.load(_write(tmp_path, lines))
    assert len(trace.turns) == 2 and len(trace.messages) == 5
    by_call = {s.parent_tool_call_id: s for s in trace.subagents}
    assert set(by_call) == {"task1", "task2", None}
    assert [len(by_call["task1"].turns), len(by_call["task2"].turns)] == [2, 1]
    assert by_call["task2"].messages[0].text == "write ui"
    assert claude_code.UNLINKED in by_call[None].notes
    for part in trace.walk():
        _check_pairs(part)


def test_summary_without_boundary_is_a_compaction(tmp_path: Path) -> None:
    lines = [
        _user("u1", None, "hi"),
        _ai("a1", "u1", "m1", _text("hello")),
        _user("s1", "a1", "Summary of the earlier talk", isCompactSummary=True),
        _user("u2", "s1", "next"),
        _ai("a2", "u2", "m2", _text("sure")),
    ]
    (trace,) = ctxlab.load(_write(tmp_path, lines))
    (compaction,) = trace.compactions
    assert (compaction.turn, compaction.trigger, compaction.pre_tokens) == (1, None, None)
    assert compaction.summary == "Summary of the earlier talk"
    assert [m.text for m in trace.turns[1].inputs] == ["Summary of the earlier talk", "next"]
    assert [m.text for m in trace.messages] == ["hi", "hello", "next", "sure"]


def test_a_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = _write(tmp_path, [_user("u1", None, "hi"), [1, 2]])
    with pytest.raises(ctxlab.TraceFormatError, match="line 2: expected one JSON object per line"):
        ctxlab.load(path)


def _tool_use(**block: Any) -> dict[str, Any]:
    return _entry("assistant", "u2", "a1", message={"id": "m2", "content": [block]})


REASONS = {
    "type a number": ({**_user("u2", "a1", "hi"), "type": 3}, "field 'type': expected a string"),
    "uuid a number": ({**_user("u2", "a1", "hi"), "uuid": 3}, "field 'uuid': expected a string"),
    "parent a list": (_user("u2", ["a1"], "hi"), "field 'parentUuid': expected a string"),
    "logical parent a number": (
        _user("u2", "a1", "hi", logicalParentUuid=1),
        "field 'logicalParentUuid': expected a string",
    ),
    "timestamp an object": (
        _user("u2", "a1", "hi", timestamp={}),
        "field 'timestamp': expected a string, got dict",
    ),
    "type and uuid both wrong: the first is named": (
        {**_user("u2", "a1", "hi"), "type": 3, "uuid": 4},
        "field 'type': expected a string",
    ),
    "message id a number": (
        _entry("assistant", "u2", "a1", message={"id": 5, "content": []}),
        "field 'message.id': expected a string",
    ),
    "model a list": (
        _entry("assistant", "u2", "a1", message={"id": "m", "model": [], "content": []}),
        "field 'message.model': expected a string, got list",
    ),
    "stop reason a number": (
        _entry("assistant", "u2", "a1", message={"id": "m", "stop_reason": 1, "content": []}),
        "field 'message.stop_reason': expected a string",
    ),
    "usage count a boolean": (
        _ai("u2", "a1", "m9", _text("x"), {"output_tokens": True}),
        "field 'message.usage.output_tokens': expected a non-negative integer, got bool",
    ),
    "usage count a float": (
        _ai("u2", "a1", "m9", _text("x"), {"cache_read_input_tokens": 1.5}),
        "field 'message.usage.cache_read_input_tokens': expected a non-negative integer",
    ),
    "block not an object": (
        _user("u2", "a1", [_text("a"), "b"]),
        "field 'message.content[1]': expected an object, got str",
    ),
    "block type missing": (
        _user("u2", "a1", [{"text": "a"}]),
        "field 'message.content[0].type': expected a string, got null",
    ),
    "tool_use id missing": (
        _tool_use(type="tool_use", name="Bash", input={}),
        "field 'message.content[0].id': expected a string, got null",
    ),
    "tool_use name a number": (
        _tool_use(type="tool_use", id="t", name=1, input={}),
        "field 'message.content[0].name': expected a string, got int",
    ),
    "tool_use input a list": (
        _tool_use(type="tool_use", id="t", name="Bash", input=[]),
        "field 'message.content[0].input': expected an object, got list",
    ),
    "tool_result id missing": (
        _user("u2", "a1", [{"type": "tool_result", "content": "x"}]),
        "field 'message.content[0].tool_use_id': expected a string, got null",
    ),
    "tool_result content a number": (
        _user("u2", "a1", [{"type": "tool_result", "tool_use_id": "t", "content": 2}]),
        "field 'message.content[0].content': expected a string or a list, got int",
    ),
}


@pytest.mark.parametrize("case", sorted(REASONS))
def test_each_checked_field_is_named_with_its_type(tmp_path: Path, case: str) -> None:
    """The line checks test a line's fields together and name one only when a value is off:
    each field still fails with its own name, on its own line, the first one first."""
    bad, reason = REASONS[case]
    head = _ai("a1", None, "m1", _text("hello"))
    path = _write(tmp_path, [head, bad, _user("u3", "u2", "more")])
    with pytest.raises(ctxlab.TraceFormatError) as caught:
        ctxlab.load(path)
    assert caught.value.line == 2
    assert reason in str(caught.value)
