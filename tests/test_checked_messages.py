"""Messages built from checked fields (`checked_messages`) are the messages LangChain's own
constructors build from the same fields: same class, fields in the same order, same JSON, same
fields set, no extras, and as unshared with the caller's lists and dicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

import ctxlab
from ctxlab._ingest.formats import checked_messages
from ctxlab._ingest.formats.checked_messages import same
from tests.test_format_claude_code import (
    COMPACTED,
    SESSION,
    SIDECHAINS,
    _ai,
    _call,
    _parallel_session,
    _text,
    _usage,
    _user,
    _write,
)


def _blocks() -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": "t"},
        {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"cmd": ["ls", {"a": 1}]}},
    ]


def _calls() -> list[dict[str, Any]]:
    return [{"name": "Bash", "args": {"cmd": ["ls", {"a": 1}]}, "id": "c1", "type": "tool_call"}]


def _usage_metadata() -> dict[str, Any]:
    return {
        "input_tokens": 120,
        "output_tokens": 4,
        "total_tokens": 124,
        "input_token_details": {"cache_read": 100, "cache_creation": 15},
    }


def _pairs() -> list[tuple[str, BaseMessage, BaseMessage]]:
    meta = {"model_provider": "anthropic", "model_name": "claude-sonnet-4-5"}
    return [
        ("human text", checked_messages.human("hi"), HumanMessage(content="hi")),
        ("human blocks", checked_messages.human(_blocks()), HumanMessage(content=_blocks())),  # type: ignore[arg-type]
        (
            "tool text",
            checked_messages.tool("out", "c1", "success", "Bash"),
            ToolMessage(content="out", tool_call_id="c1", status="success", name="Bash"),
        ),
        (
            "tool blocks, no name",
            checked_messages.tool(_blocks(), "c1", "error", None),
            ToolMessage(content=_blocks(), tool_call_id="c1", status="error", name=None),  # type: ignore[arg-type]
        ),
        (
            "tool content the constructor coerces",
            checked_messages.tool(["a", 3, {"type": "text", "text": "b"}], "c1", "success", None),
            ToolMessage(
                content=["a", 3, {"type": "text", "text": "b"}],  # type: ignore[list-item]
                tool_call_id="c1",
                status="success",
                name=None,
            ),
        ),
        (
            "ai with a call and usage",
            checked_messages.ai(_blocks(), "msg_1", _calls(), meta, _usage_metadata()),
            AIMessage(
                content=_blocks(),  # type: ignore[arg-type]
                id="msg_1",
                tool_calls=_calls(),  # type: ignore[arg-type]
                response_metadata=meta,
                usage_metadata=_usage_metadata(),  # type: ignore[arg-type]
            ),
        ),
        (
            "ai without usage",
            checked_messages.ai([{"type": "text", "text": "x"}], "u-2", [], {}, None),
            AIMessage(
                content=[{"type": "text", "text": "x"}],
                id="u-2",
                tool_calls=[],
                response_metadata={},
                usage_metadata=None,
            ),
        ),
    ]


def test_the_tested_langchain_core_takes_the_path_without_validation() -> None:
    """With the versions in constraints.txt the import-time comparison agrees, so the loads
    below exercise the fast path, not the constructors it falls back to."""
    assert checked_messages._SAME


@pytest.mark.parametrize("case", range(len(_pairs())), ids=[p[0] for p in _pairs()])
def test_each_shape_is_the_message_its_constructor_builds(case: int) -> None:
    _, built, constructed = _pairs()[case]
    assert same(built, constructed)
    assert built == constructed
    assert built.model_dump_json() == constructed.model_dump_json()


def test_the_message_shares_no_list_or_dict_the_caller_keeps() -> None:
    """As validation copies them: editing the caller's blocks, calls, metadata or usage
    afterwards leaves the message as built."""
    blocks, calls, meta, usage = _blocks(), _calls(), {"model_name": "m"}, _usage_metadata()
    message = checked_messages.ai(blocks, "m1", calls, meta, usage)
    expected = message.model_dump_json()
    blocks.append({"type": "text", "text": "later"})
    blocks[0]["text"] = "changed"
    calls[0]["args"]["more"] = 1
    meta["model_name"] = "other"
    usage["input_token_details"]["cache_read"] = 0
    assert message.model_dump_json() == expected


def test_same_tells_apart_what_equality_does_not() -> None:
    """The comparison the import check and these tests rest on can fail: pydantic's `==`
    ignores the fields set and the order of a dict's keys, which JSON output keeps."""
    given = AIMessage(content="a", usage_metadata=None)
    defaulted = AIMessage(content="a")
    assert given == defaulted and not same(given, defaulted)
    reordered = HumanMessage(content="a", additional_kwargs={"x": 1, "y": 2})
    other_order = HumanMessage(content="a", additional_kwargs={"y": 2, "x": 1})
    assert reordered == other_order and not same(reordered, other_order)


def _rebuilt(message: BaseMessage) -> BaseMessage:
    """The message LangChain's constructor builds from the fields the loaded one has set."""
    return type(message)(**{name: getattr(message, name) for name in message.model_fields_set})


def _all_messages(traces: list[ctxlab.Trace]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for top in traces:
        for trace in top.walk():
            out += [*trace.messages, *trace.inserted]
            out += [m for turn in trace.turns for m in (*turn.inputs, turn.output) if m]
    return out


def test_a_synthetic_sessions_messages_are_their_constructors(tmp_path: Path) -> None:
    lines = [
        *_parallel_session(),
        _user("u9", "a4", [{"type": "tool_result", "tool_use_id": "t2", "content": [1, "x"]}]),
        _ai("a9", "u9", "m9", _call("t9", name="Read", path="/a"), _usage(1, 1, 2, 3)),
        _user("u10", "a9", [{"type": "tool_result", "tool_use_id": "t9", "is_error": True}]),
        _ai("a10", "u10", "m10", _text("end")),
    ]
    messages = _all_messages(ctxlab.load(_write(tmp_path, lines)))
    kinds = {type(m).__name__ for m in messages}
    assert kinds == {"HumanMessage", "AIMessage", "ToolMessage"}
    assert all(same(m, _rebuilt(m)) for m in messages)


def test_the_real_sessions_messages_are_their_constructors(shared: Path) -> None:
    data = shared / "data"
    paths = [data / COMPACTED / f"{SESSION}.jsonl.gz", data / SIDECHAINS]
    paths += sorted((data / "corpus" / "agentlogs-claudecode").glob("*.jsonl.gz"))
    for path in paths:
        if path.is_file():
            messages = _all_messages(ctxlab.load(path))
            assert messages and all(same(m, _rebuilt(m)) for m in messages), path.name
