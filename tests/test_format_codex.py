"""Codex CLI rollouts load: the real 0.125 session with exact counts, and synthetic rollouts for
what it lacks (compactions local, remote and manual, older event shapes, malformed lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab._ingest.formats import codex
from ctxlab._messages import is_summary
from ctxlab._replay.policies.codex import CODEX_SUMMARY_PREFIX

ROLLOUT = (
    "data/real-traces/codex-rollout/"
    "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"
)


def _pairs_hold(messages: list) -> bool:
    called: set[str] = set()
    for msg in messages:
        if isinstance(msg, AIMessage):
            called.update(c["id"] for c in msg.tool_calls)
        elif isinstance(msg, ToolMessage) and msg.tool_call_id not in called:
            return False
    return True


def test_real_rollout_exact_counts(shared: Path) -> None:
    traces = ctxlab.load(shared / ROLLOUT)
    assert len(traces) == 1
    trace = traces[0]
    assert trace.format == "codex"
    assert trace.trace_id == "019e1625-789d-76c0-80ab-3724b5ddb799"
    assert (trace.model, trace.provider) == ("gpt-5.5", "openai")
    # base instructions + developer message, AGENTS.md + 2 prompts, 66 calls, 99 + 3 results
    kinds = [type(m) for m in trace.messages]
    assert len(trace.messages) == 173
    assert kinds.count(SystemMessage) == 2
    assert kinds.count(HumanMessage) == 3
    assert kinds.count(AIMessage) == 66
    assert kinds.count(ToolMessage) == 102
    assert len(trace.turns) == 66
    assert trace.subagents == [] and trace.harness_calls == [] and trace.inserted == []
    assert trace.recorded_compactions == [] and trace.compactions == []
    assert trace.recorded_input_tokens == 6_055_836
    assert sum(t.cache_read_tokens or 0 for t in trace.turns) == 4_929_536
    assert sum(t.output_tokens or 0 for t in trace.turns) == 9_118
    assert trace.turns[0].input_tokens == 18_703
    assert max(t.input_tokens or 0 for t in trace.turns) == trace.turns[-1].input_tokens == 131_573
    assert trace.metadata["total_token_usage"]["input_tokens"] == 6_055_836
    assert trace.metadata["model_context_window"] == 258_400
    assert trace.metadata["effort"] == "medium"
    calls = [c["name"] for m in trace.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert len(calls) == 102
    assert calls.count("write_stdin") == 54 and calls.count("apply_patch") == 3
    assert _pairs_hold(trace.messages)
    for turn in trace.turns:  # no compaction: every input is the full history before the call
        assert list(turn.inputs) == trace.messages[: turn.position]
        assert trace.messages[turn.position] is turn.output
    assert trace.turns[0].started_at == "2026-05-11T08:27:17.495Z"
    assert any("Tool schemas are not recorded" in n for n in trace.notes)
    assert any("Encrypted reasoning items (25)" in n for n in trace.notes)


@pytest.mark.parametrize("policy", ["deepagents", "codex"])
def test_real_rollout_replays(shared: Path, policy: str) -> None:
    trace = ctxlab.load(shared / ROLLOUT)[0]
    result = ctxlab.replay(trace, policy)
    assert result.turns.height == 66
    assert result.turns["recorded_input_tokens"].to_list() == [t.input_tokens for t in trace.turns]


# -- synthetic rollouts ---------------------------------------------------------------------

STAMP = "2026-01-01T00:00:{:02d}.000Z"


def _line(n: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": STAMP.format(n % 60), "type": kind, "payload": payload}


def _write(tmp_path: Path, lines: list[Any], name: str = "rollout-test.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _assistant(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def _usage(inp: int, cached: int, out: int) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": 0,
        "total_tokens": inp + out,
    }


class _Counter:
    """token_count events as Codex writes them: per-call usage and running totals."""

    def __init__(self) -> None:
        self.totals = _usage(0, 0, 0)

    def call(self, inp: int, cached: int, out: int) -> dict[str, Any]:
        last = _usage(inp, cached, out)
        self.totals = {k: self.totals[k] + last[k] for k in last}
        return self.event(last)

    def event(self, last: dict[str, int]) -> dict[str, Any]:
        info = {"total_token_usage": dict(self.totals), "last_token_usage": last}
        return {"type": "token_count", "info": {**info, "model_context_window": 100_000}}


def _session(n: int = 0) -> list[dict[str, Any]]:
    return [
        _line(
            n,
            "session_meta",
            {
                "id": "sess-1",
                "cli_version": "0.99.0",
                "model_provider": "openai",
                "base_instructions": {"text": "You are Codex."},
            },
        ),
        _line(n, "event_msg", {"type": "task_started", "model_context_window": 100_000}),
        _line(n, "turn_context", {"model": "gpt-5", "effort": "high"}),
    ]


SUMMARY = CODEX_SUMMARY_PREFIX + "\nThe user wants X; ran ls."


def _compacted_rollout(replacement: bool, wrapped: bool = False) -> list[dict[str, Any]]:
    """A local auto compaction mid-task. Versions without `replacement_history` write Codex's
    estimate of the compacted history before the `compacted` line, later ones after it; the
    newest wrap each replacement item with its metadata."""
    tc = _Counter()
    lines = [
        *_session(),
        _line(1, "response_item", _user("list the files")),
        _line(2, "response_item", {"type": "reasoning", "summary": [], "encrypted_content": "x"}),
        _line(
            2,
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"cmd": "ls"}',
                "call_id": "c1",
            },
        ),
        _line(3, "event_msg", tc.call(1000, 0, 50)),
        _line(
            4, "response_item", {"type": "function_call_output", "call_id": "c1", "output": "a b"}
        ),
        _line(5, "response_item", _assistant("Two files.")),
        _line(5, "event_msg", tc.call(1200, 1000, 20)),
        _line(6, "event_msg", tc.event(_usage(1200, 1000, 20)) | {}),  # a repeated event
        _line(7, "event_msg", tc.call(1300, 1200, 80)),  # the summariser's call
    ]
    compacted: dict[str, Any] = {"message": SUMMARY}
    estimate = _line(8, "event_msg", tc.event({**_usage(0, 0, 0), "total_tokens": 321}))
    if replacement:
        items = [_user("list the files"), _user(SUMMARY), {"type": "ghost_snapshot"}]
        if wrapped:
            items = [{"item": item, "metadata": {}} for item in items]
        compacted["replacement_history"] = items
        lines += [_line(8, "compacted", compacted), estimate]
    else:
        lines += [estimate, _line(8, "compacted", compacted)]
    lines += [
        _line(9, "response_item", _user("now count them")),
        _line(10, "response_item", _assistant("Two.")),
        _line(10, "event_msg", tc.call(400, 0, 5)),
        _line(11, "event_msg", {"type": "task_complete"}),
    ]
    return lines


@pytest.mark.parametrize("wrapped", [False, True])
def test_local_compaction_with_replacement_history(tmp_path: Path, wrapped: bool) -> None:
    trace = ctxlab.load(_write(tmp_path, _compacted_rollout(replacement=True, wrapped=wrapped)))[0]
    assert [t.input_tokens for t in trace.turns] == [1000, 1200, 400]
    assert [t.compacted for t in trace.turns] == [False, False, True]
    assert trace.recorded_compactions == [2]
    (summariser,) = trace.harness_calls
    assert (summariser.name, summariser.input_tokens, summariser.output_tokens) == (
        "compact",
        1300,
        80,
    )
    (event,) = trace.compactions
    assert (event.turn, event.kind, event.trigger) == (2, "summarize", "auto")
    assert event.pre_tokens == 1220  # the last call's input + output, what Codex compares
    assert event.post_tokens == 321  # Codex's estimate of the compacted history
    assert event.summary == SUMMARY
    assert event.started_at == STAMP.format(8)
    (summary,) = trace.inserted
    assert is_summary(summary) and summary.text == SUMMARY
    # the full history keeps everything and never the summary
    assert [m.type for m in trace.messages] == [
        "system",
        "human",
        "ai",
        "tool",
        "ai",
        "human",
        "ai",
    ]
    assert summary not in trace.messages
    last = trace.turns[2]
    assert [m.text for m in last.inputs] == [
        "You are Codex.",
        "list the files",
        SUMMARY,
        "now count them",
    ]
    assert last.inputs[1] is trace.messages[1]  # the kept user message is the same object
    assert last.inputs[2] is summary
    assert trace.turns[0].output.tool_calls[0]["args"] == {"cmd": "ls"}
    assert trace.turns[0].output.usage_metadata["input_token_details"] == {"cache_read": 0}
    for policy in ("deepagents", "codex"):
        assert ctxlab.replay(trace, policy).turns.height == 3


def test_local_compaction_without_replacement_history_is_rebuilt(tmp_path: Path) -> None:
    trace = ctxlab.load(_write(tmp_path, _compacted_rollout(replacement=False)))[0]
    last = trace.turns[2]
    assert [m.text for m in last.inputs] == [
        "You are Codex.",
        "list the files",
        SUMMARY,
        "now count them",
    ]
    assert trace.compactions[0].summary == SUMMARY
    assert trace.compactions[0].post_tokens == 321
    assert len(trace.harness_calls) == 1
    assert any("has no replacement_history" in n for n in trace.notes)


def test_remote_compaction_keeps_a_placeholder(tmp_path: Path) -> None:
    tc = _Counter()
    lines = [
        *_session(),
        _line(1, "response_item", _user("hello")),
        _line(2, "response_item", _assistant("hi")),
        _line(2, "event_msg", tc.call(100, 0, 5)),
        _line(
            3,
            "compacted",
            {
                "message": "",
                "replacement_history": [
                    _user("hello"),
                    {"type": "compaction", "encrypted_content": "zz"},
                ],
            },
        ),
        _line(4, "response_item", _user("again")),
        _line(5, "response_item", _assistant("hi again")),
        _line(5, "event_msg", tc.call(60, 0, 5)),
    ]
    trace = ctxlab.load(_write(tmp_path, lines))[0]
    (event,) = trace.compactions
    assert event.summary is None and event.turn == 1 and event.pre_tokens == 105
    assert trace.harness_calls == []
    assert is_summary(trace.turns[1].inputs[2])
    assert any("encrypted" in n and "placeholder" in n for n in trace.notes)


def test_manual_compact_is_its_own_task(tmp_path: Path) -> None:
    tc = _Counter()
    lines = [
        *_session(),
        _line(1, "response_item", _user("hello")),
        _line(2, "response_item", _assistant("hi")),
        _line(2, "event_msg", tc.call(100, 0, 5)),
        _line(3, "event_msg", {"type": "task_complete"}),
        _line(4, "event_msg", {"type": "task_started"}),
        _line(5, "event_msg", tc.call(120, 100, 30)),
        _line(6, "compacted", {"message": SUMMARY}),
        _line(7, "event_msg", {"type": "task_complete"}),
        _line(8, "event_msg", {"type": "task_started"}),
        _line(9, "response_item", _user("go on")),
        _line(10, "response_item", _assistant("ok")),
        _line(10, "event_msg", tc.call(90, 0, 5)),
    ]
    trace = ctxlab.load(_write(tmp_path, lines))[0]
    assert [c.trigger for c in trace.compactions] == ["manual"]
    assert len(trace.harness_calls) == 1 and len(trace.turns) == 2
    assert any("manual /compact" in n for n in trace.notes)


def test_explicit_trigger_is_taken_from_the_file(tmp_path: Path) -> None:
    tc = _Counter()
    lines = [
        *_session(),
        _line(1, "response_item", _user("hello")),
        _line(2, "response_item", _assistant("hi")),
        _line(2, "event_msg", tc.call(100, 0, 5)),
        _line(3, "compacted", {"message": SUMMARY, "trigger": "manual"}),
        _line(4, "response_item", _assistant("more")),
        _line(4, "event_msg", tc.call(50, 0, 5)),
    ]
    trace = ctxlab.load(_write(tmp_path, lines))[0]
    assert trace.compactions[0].trigger == "manual"


def test_older_shapes_are_tolerated(tmp_path: Path) -> None:
    """token_count without info, flat per-call usage repeated, custom tools, local shell."""
    flat = {"type": "token_count", **_usage(500, 100, 10)}
    lines = [
        _line(0, "session_meta", {"id": "old", "instructions": None}),
        _line(0, "turn_context", {"model": "codex-mini-latest"}),
        _line(1, "response_item", _user("patch it")),
        _line(
            2,
            "response_item",
            {
                "type": "custom_tool_call",
                "call_id": "p1",
                "name": "apply_patch",
                "input": "*** Begin Patch",
            },
        ),
        _line(2, "event_msg", {"type": "token_count", "info": None, "rate_limits": {}}),
        _line(3, "event_msg", flat),
        _line(3, "event_msg", flat),
        _line(
            4,
            "response_item",
            {
                "type": "custom_tool_call_output",
                "call_id": "p1",
                "output": {"output": "Done", "metadata": {}},
            },
        ),
        _line(
            5,
            "response_item",
            {
                "type": "local_shell_call",
                "call_id": "s1",
                "status": "completed",
                "action": {"type": "exec", "command": ["ls"]},
            },
        ),
        _line(6, "response_item", {"type": "function_call_output", "call_id": "s1", "output": "x"}),
        _line(7, "response_item", _assistant("done")),
    ]
    trace = ctxlab.load(_write(tmp_path, lines))[0]
    assert [t.input_tokens for t in trace.turns] == [500, None, None]
    assert trace.turns[0].output.tool_calls[0]["args"] == {"input": "*** Begin Patch"}
    assert trace.messages[2].content == "Done"
    assert trace.turns[1].output.tool_calls[0]["name"] == "local_shell"
    assert trace.model == "codex-mini-latest"
    assert any("base instructions" in n for n in trace.notes)
    assert any("without a token_count event (2)" in n for n in trace.notes)


def test_earliest_format_with_bare_items(tmp_path: Path) -> None:
    lines = [
        {"id": "abc", "timestamp": "2025-05-01T00:00:00Z", "instructions": None},
        {"record_type": "state"},
        _user("hi"),
        {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command": ["ls"]}',
            "call_id": "c",
        },
        {
            "type": "function_call_output",
            "call_id": "c",
            "output": '{"output": "f", "metadata": {}}',
        },
        _assistant("one file"),
    ]
    trace = ctxlab.load(_write(tmp_path, lines))[0]
    assert trace.format == "codex" and trace.trace_id == "abc"
    assert len(trace.turns) == 2 and len(trace.messages) == 4
    assert trace.turns[1].inputs == tuple(trace.messages[:3])


# -- bad files ------------------------------------------------------------------------------


def _bad(tmp_path: Path, bad: dict[str, Any]) -> ctxlab.TraceFormatError:
    lines = [*_session(), _line(1, "response_item", _user("hi")), bad]
    path = _write(tmp_path, lines)
    with pytest.raises(ctxlab.TraceFormatError) as info:
        ctxlab.load(path)
    assert str(path) in str(info.value) and "line 5" in str(info.value)
    return info.value


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (
            {"timestamp": "t", "type": "response_item", "payload": "oops"},
            "'payload' must be an object",
        ),
        (
            _line(2, "response_item", {"type": "message", "role": "user", "content": 5}),
            "'payload.content'",
        ),
        (
            _line(2, "response_item", {"type": "message", "role": "robot", "content": "x"}),
            "'payload.role'",
        ),
        (
            _line(
                2,
                "response_item",
                {"type": "function_call", "name": "f", "arguments": 5, "call_id": "c"},
            ),
            "'payload.arguments'",
        ),
        (
            _line(
                2,
                "response_item",
                {"type": "function_call", "name": 3, "arguments": "{}", "call_id": "c"},
            ),
            "'payload.name' must be a string",
        ),
        (
            _line(
                2,
                "response_item",
                {"type": "function_call_output", "call_id": "nope", "output": "x"},
            ),
            "no earlier function_call",
        ),
        (
            _line(
                2,
                "event_msg",
                {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": _usage(1, 0, 1),
                        "last_token_usage": {"input_tokens": "12"},
                    },
                },
            ),
            "'last_token_usage.input_tokens' must be a non-negative integer",
        ),
        (
            _line(2, "event_msg", {"type": "token_count", "info": []}),
            "'payload.info' must be an object",
        ),
        (_line(2, "compacted", {"message": 7}), "'payload.message' must be a string"),
        (
            _line(2, "compacted", {"message": "s", "replacement_history": {}}),
            "'payload.replacement_history' must be a list",
        ),
        (_line(2, "turn_context", {"model": ["gpt"]}), "'payload.model' must be a string"),
    ],
)
def test_bad_lines_are_located(tmp_path: Path, bad: dict[str, Any], says: str) -> None:
    assert says in str(_bad(tmp_path, bad))


def test_rollout_without_model_calls_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, [*_session(), _line(1, "response_item", _user("hi"))])
    with pytest.raises(ctxlab.TraceFormatError, match="no model calls"):
        ctxlab.load(path)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


WRONG = (None, -1, "s", [1], {"a": 1})


def test_any_wrong_typed_field_is_a_located_error_or_loads() -> None:
    """Every field of a compacted rollout replaced by each wrong type, or removed: reading
    either succeeds or raises TraceFormatError, never a raw Python error."""
    base = _compacted_rollout(True)
    for number, line in enumerate(base):
        for path in _paths(line):
            for wrong in (*WRONG, KeyError):
                doc = json.loads(json.dumps(base))
                parent = doc[number]
                for key in path[:-1]:
                    parent = parent[key]
                if wrong is KeyError:
                    del parent[path[-1]]
                else:
                    parent[path[-1]] = wrong
                try:
                    codex.read([(v, i + 1) for i, v in enumerate(doc)], "f.jsonl")
                except ctxlab.TraceFormatError:
                    pass
