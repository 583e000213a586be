"""LangChain messages from fields a reader has already checked, without pydantic's second pass.

`AIMessage(...)` validates every field again (10 us for an answer with one tool call, 3-5 us
for a user message or tool result): a sixth of loading a small Claude Code session, whose
reader checks every field it passes on (`claude_code_lines`). The functions here set the
state that validation would produce for such fields (the same field order, the same copies of
lists and dicts, the same set of fields given, no extras), so the message is the one its
constructor builds: equal, equal JSON, equally unshared with what the caller keeps.

That holds for the `langchain_core` this module was checked with. It is checked again at
import (`_SAME`): a sample of each message is built both ways and compared; if any differs
(a `langchain_core` that adds a field or a validator), every function here calls the
constructor instead. `ToolMessage` contents that validation would coerce (list items that are
neither text nor objects) always go through the constructor.
"""

from __future__ import annotations

from typing import Any

import orjson
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

_set = object.__setattr__


def _made(cls: type[BaseMessage], state: dict[str, Any], given: set[str]) -> Any:
    """An instance of `cls` holding `state`, with `given` as the fields set by the caller."""
    message = cls.__new__(cls)
    _set(message, "__dict__", state)
    _set(message, "__pydantic_fields_set__", given)
    _set(message, "__pydantic_extra__", {})
    _set(message, "__pydantic_private__", None)
    return message


def _content(content: str | list[Any]) -> str | list[Any]:
    """Content as validation leaves it: text as is, a list copied with its objects copied."""
    if type(content) is str:
        return content
    return [dict(item) if type(item) is dict else item for item in content]


_HUMAN_GIVEN = frozenset({"content"})
_TOOL_GIVEN = frozenset({"content", "tool_call_id", "status", "name"})
_AI_GIVEN = frozenset({"content", "id", "tool_calls", "response_metadata", "usage_metadata"})


def _fast_human(content: str | list[dict[str, Any]]) -> HumanMessage:
    state: dict[str, Any] = {
        "content": _content(content),
        "additional_kwargs": {},
        "response_metadata": {},
        "type": "human",
        "name": None,
        "id": None,
    }
    return _made(HumanMessage, state, set(_HUMAN_GIVEN))


def _fast_tool(
    content: str | list[Any], tool_call_id: str, status: str, name: str | None
) -> ToolMessage:
    state: dict[str, Any] = {
        "content": _content(content),
        "additional_kwargs": {},
        "response_metadata": {},
        "type": "tool",
        "name": name,
        "id": None,
        "tool_call_id": tool_call_id,
        "artifact": None,
        "status": status,
    }
    return _made(ToolMessage, state, set(_TOOL_GIVEN))


def _fast_ai(
    content: list[dict[str, Any]],
    message_id: str | None,
    tool_calls: list[dict[str, Any]],
    metadata: dict[str, Any],
    usage: dict[str, Any] | None,
) -> AIMessage:
    state: dict[str, Any] = {
        "content": _content(content),
        "additional_kwargs": {},
        "response_metadata": dict(metadata),
        "type": "ai",
        "name": None,
        "id": message_id,
        "tool_calls": [
            {"name": c["name"], "args": dict(c["args"]), "id": c["id"], "type": "tool_call"}
            for c in tool_calls
        ],
        "invalid_tool_calls": [],
        "usage_metadata": None if usage is None else _usage(usage),
    }
    return _made(AIMessage, state, set(_AI_GIVEN))


def _usage(usage: dict[str, Any]) -> dict[str, Any]:
    """`UsageMetadata` as validation orders it: the TypedDict's keys, then the details'."""
    details = usage["input_token_details"]
    return {
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "total_tokens": usage["total_tokens"],
        "input_token_details": {
            "cache_creation": details["cache_creation"],
            "cache_read": details["cache_read"],
        },
    }


def human(content: str | list[dict[str, Any]]) -> HumanMessage:
    """`HumanMessage(content=content)`: text, or a list of checked content blocks."""
    if _SAME:
        return _fast_human(content)
    return HumanMessage(content=content)  # type: ignore[arg-type]


def tool(content: str | list[Any], tool_call_id: str, status: str, name: str | None) -> ToolMessage:
    """`ToolMessage(content=..., tool_call_id=..., status=..., name=...)`."""
    if _SAME and (type(content) is str or all(type(x) in (str, dict) for x in content)):
        return _fast_tool(content, tool_call_id, status, name)
    return ToolMessage(
        content=content,
        tool_call_id=tool_call_id,
        status=status,
        name=name,
    )


def ai(
    content: list[dict[str, Any]],
    message_id: str | None,
    tool_calls: list[dict[str, Any]],
    metadata: dict[str, Any],
    usage: dict[str, Any] | None,
) -> AIMessage:
    """`AIMessage(content=..., id=..., tool_calls=..., response_metadata=...,
    usage_metadata=...)`: content blocks, tool calls of `{name, args, id, type}` with text
    names and ids and object arguments, text metadata, usage of counts with
    `input_token_details` of `cache_read` and `cache_creation`."""
    if _SAME:
        return _fast_ai(content, message_id, tool_calls, metadata, usage)
    return AIMessage(
        content=content,  # type: ignore[arg-type]
        id=message_id,
        tool_calls=tool_calls,
        response_metadata=metadata,
        usage_metadata=usage,
    )


def same(a: BaseMessage, b: BaseMessage) -> bool:
    """Whether two messages are the same state: class, fields and their order, JSON, the
    fields set, no extras or private state."""
    return (
        type(a) is type(b)
        and a.__dict__ == b.__dict__
        and list(a.__dict__) == list(b.__dict__)
        and orjson.dumps(a.model_dump()) == orjson.dumps(b.model_dump())
        and a.model_fields_set == b.model_fields_set
        and a.__pydantic_extra__ == b.__pydantic_extra__
        and a.__pydantic_private__ == b.__pydantic_private__
    )


def _samples() -> list[tuple[BaseMessage, BaseMessage]]:
    """Each message shape this module builds, built here and by its constructor."""
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": "t"},
        {"type": "tool_use", "id": "c", "name": "n", "input": {"k": [1, {"x": None}]}},
    ]
    calls: list[dict[str, Any]] = [
        {"name": "n", "args": {"k": [1, {"x": None}]}, "id": "c", "type": "tool_call"}
    ]
    usage: dict[str, Any] = {
        "input_tokens": 7,
        "output_tokens": 2,
        "total_tokens": 9,
        "input_token_details": {"cache_read": 3, "cache_creation": 1},
    }
    meta = {"model_provider": "anthropic", "model_name": "m", "stop_reason": "tool_use"}
    return [
        (_fast_human("hi"), HumanMessage(content="hi")),
        (_fast_human(blocks), HumanMessage(content=blocks)),  # type: ignore[arg-type]
        (
            _fast_tool("out", "c", "success", "n"),
            ToolMessage(content="out", tool_call_id="c", status="success", name="n"),
        ),
        (
            _fast_tool(blocks, "c", "error", None),
            ToolMessage(content=blocks, tool_call_id="c", status="error", name=None),  # type: ignore[arg-type]
        ),
        (
            _fast_ai(blocks, "m1", calls, meta, usage),
            AIMessage(
                content=blocks,  # type: ignore[arg-type]
                id="m1",
                tool_calls=calls,
                response_metadata=meta,
                usage_metadata=usage,
            ),
        ),
        (
            _fast_ai([], None, [], {}, None),
            AIMessage(
                content=[], id=None, tool_calls=[], response_metadata={}, usage_metadata=None
            ),
        ),
    ]


def _agree() -> bool:
    try:
        return all(same(a, b) for a, b in _samples())
    except Exception:  # noqa: BLE001 - a langchain_core this module does not know: constructors
        return False


_SAME = _agree()
"""Whether this `langchain_core` builds the messages exactly as the functions here do."""

__all__ = ["ai", "human", "same", "tool"]
