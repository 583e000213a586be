"""Round trips: every encoding LangChain and the providers write decodes back to the message.

Encoders are the real ones (langchain_core `dumpd`, `model_dump`, `messages_to_dict`,
`convert_to_openai_messages`, `repr`; langchain_anthropic's own request formatter), so the
decoders are checked against what exports really contain, not against our own writer.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_anthropic.chat_models import _format_messages
from langchain_core.load import dumpd
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
    messages_to_dict,
)

from ctxlab._ingest.formats.messages import MessageDecodeError, decode_messages, parse_arguments

text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40
).filter(lambda s: s.strip() == s and s)
ident = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True)
value = st.one_of(
    text, st.integers(-(10**6), 10**6), st.booleans(), st.lists(st.integers(0, 9), max_size=3)
)
args = st.dictionaries(ident, value, max_size=3)


@st.composite
def conversations(draw: st.DrawFn) -> list[BaseMessage]:
    msgs: list[BaseMessage] = []
    if draw(st.booleans()):
        msgs.append(SystemMessage(draw(text)))
    n_call = 0
    for _ in range(draw(st.integers(1, 4))):
        msgs.append(HumanMessage(draw(text), id=f"h{len(msgs)}"))
        calls = []
        for _ in range(draw(st.integers(0, 2))):
            n_call += 1
            calls.append(
                {
                    "name": draw(ident),
                    "args": draw(args),
                    "id": f"call_{n_call}",
                    "type": "tool_call",
                }
            )
        msgs.append(AIMessage(draw(text), tool_calls=calls, id=f"a{len(msgs)}"))
        for call in calls:
            msgs.append(ToolMessage(draw(text), tool_call_id=call["id"], name=call["name"]))
        if calls:
            msgs.append(AIMessage(draw(text), id=f"a{len(msgs)}"))
    return msgs


def semantic(msgs: list[BaseMessage]) -> list[tuple]:
    return [
        (
            m.type,
            m.text,
            [(c["name"], c["args"], c["id"]) for c in getattr(m, "tool_calls", [])],
            getattr(m, "tool_call_id", None),
        )
        for m in msgs
    ]


def via_json(value: object) -> object:
    """Exports are JSON files: encode as the exporter would, then parse back."""
    return json.loads(json.dumps(value, default=str))


ENCODERS = {
    "lc-constructor": lambda ms: [dumpd(m) for m in ms],
    "lc-without-lc-key": lambda ms: [
        {k: v for k, v in dumpd(m).items() if k in ("id", "kwargs")} for m in ms
    ],
    "model_dump": lambda ms: [m.model_dump() for m in ms],
    "messages_to_dict": messages_to_dict,
    "openai": convert_to_openai_messages,
}


@pytest.mark.parametrize("encoding", sorted(ENCODERS))
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(msgs=conversations())
def test_round_trip(encoding: str, msgs: list[BaseMessage]) -> None:
    encoded = via_json(ENCODERS[encoding](msgs))
    assert semantic(decode_messages(encoded)) == semantic(msgs)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(msgs=conversations())
def test_round_trip_anthropic_request(msgs: list[BaseMessage]) -> None:
    """Anthropic puts tool results in user turns; decoding splits them back into ToolMessages."""
    system, formatted = _format_messages(msgs, model="claude-sonnet-4-5")
    decoded = decode_messages(via_json(formatted))
    want = [m for m in semantic(msgs) if m[0] != "system"]
    # Anthropic tool results carry no tool name, and AI content becomes blocks: compare payload.
    assert semantic(decoded) == want
    tool_use = [
        b
        for m in formatted
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]
    assert len(tool_use) == sum(len(m[2]) for m in want)


@settings(max_examples=40, deadline=None)
@given(msgs=conversations())
def test_round_trip_python_repr(msgs: list[BaseMessage]) -> None:
    """LangGraph chain runs store `repr(message)` strings."""
    assert semantic(decode_messages([repr(m) for m in msgs])) == semantic(msgs)


@given(a=args)
def test_arguments_in_every_spelling(a: dict) -> None:
    assert parse_arguments(a) == a
    assert parse_arguments(json.dumps(a)) == a
    assert parse_arguments(repr(a)) == a


def test_python_repr_tool_input_from_toolnode_run() -> None:
    assert parse_arguments("{'query': 'What is ML?', 'max_num_results': 5}") == {
        "query": "What is ML?",
        "max_num_results": 5,
    }
    assert parse_arguments("") == {}
    with pytest.raises(MessageDecodeError, match="neither JSON nor a Python literal"):
        parse_arguments("{'a': ")


def test_anthropic_blocks_inside_langchain_ai_are_counted_once() -> None:
    """ChatAnthropic keeps tool_use blocks in content AND in tool_calls: one call, not two."""
    block = {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "/"}}
    raw = {
        "type": "ai",
        "content": [{"type": "text", "text": "look"}, block],
        "tool_calls": [{"name": "ls", "args": {"path": "/"}, "id": "toolu_1", "type": "tool_call"}],
        "additional_kwargs": {},
    }
    (msg,) = decode_messages([raw])
    assert len(msg.tool_calls) == 1 and msg.content[1] == block


def test_openai_legacy_additional_kwargs_and_responses_items() -> None:
    legacy = {
        "type": "ai",
        "content": "",
        "additional_kwargs": {
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
            ]
        },
    }
    (msg,) = decode_messages([legacy])
    assert msg.tool_calls[0]["args"] == {"x": 1}
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": '{"y": 2}'},
        {"type": "function_call_output", "call_id": "c1", "output": "1"},
    ]
    out = decode_messages(items)
    assert [m.type for m in out] == ["human", "ai", "tool"]
    assert [c["id"] for c in out[1].tool_calls] == ["c1", "c2"]


def test_streaming_chunk_with_tool_call_chunks() -> None:
    raw = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain_core", "messages", "AIMessageChunk"],
        "kwargs": {
            "content": "",
            "tool_call_chunks": [
                {"name": "grep", "args": '{"pattern": "x"}', "id": "c1", "index": 0}
            ],
        },
    }
    (msg,) = decode_messages([raw])
    assert isinstance(msg, AIMessage) and msg.tool_calls[0]["args"] == {"pattern": "x"}


def test_unknown_message_is_a_clear_error() -> None:
    with pytest.raises(MessageDecodeError, match="unknown message type 'robot'"):
        decode_messages([{"role": "robot", "content": "x"}])
    with pytest.raises(MessageDecodeError, match="no tool_call_id"):
        decode_messages([{"role": "tool", "content": "x"}])


@pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")
def test_lc_constructor_unescapes_user_dicts_like_langchain_load() -> None:
    """`dumpd` wraps tool arguments that have an `lc` key; decoding restores them as
    `langchain_core.load.load` does (hypothesis found `{"lc": "0"}` coming back wrapped)."""
    from langchain_core.load import dumpd, load

    call = {"name": "f", "args": {"lc": "0", "n": [{"lc": 1}]}, "id": "c1", "type": "tool_call"}
    message = AIMessage("x", tool_calls=[call])
    encoded = via_json([dumpd(message)])
    assert "__lc_escaped__" in json.dumps(encoded)
    [decoded] = decode_messages(encoded)
    assert decoded.tool_calls[0]["args"] == message.tool_calls[0]["args"]
    loaded = load(encoded[0], allowed_objects="messages")
    assert decoded.tool_calls[0]["args"] == loaded.tool_calls[0]["args"]
