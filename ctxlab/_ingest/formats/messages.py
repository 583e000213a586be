"""Decoders for every message encoding seen in real exports, to `langchain_core` messages.

Encodings (see shared/research/trace-formats.md §1.4): LangChain `lc` constructor dicts (also
without `lc`/`type`, and with class ids from any module path), `model_dump` dicts, the
`messages_to_dict` `{"type", "data"}` form, OpenAI chat role dicts, Anthropic Messages role
dicts with content blocks, OpenAI Responses items, LangChain's `(role, text)` pairs, and the
Python `repr` of a message that LangGraph chain runs sometimes store. Tool calls come in five
encodings and arguments as dicts, JSON strings or Python-repr strings; all become LangChain
`tool_calls`.

Every decoder raises `MessageDecodeError` with what it expected; callers add file and run.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ctxlab._ingest.formats.fields import describe

Content = str | list[Any]
"""What a LangChain message's `content` holds: text, or a list of blocks (dicts; strings)."""


class MessageDecodeError(ValueError):
    """One message could not be decoded; the text says what was expected."""


_TYPE_ALIASES = {
    "human": "human",
    "user": "human",
    "humanmessage": "human",
    "humanmessagechunk": "human",
    "ai": "ai",
    "assistant": "ai",
    "model": "ai",
    "aimessage": "ai",
    "aimessagechunk": "ai",
    "system": "system",
    "developer": "system",
    "systemmessage": "system",
    "systemmessagechunk": "system",
    "tool": "tool",
    "toolmessage": "tool",
    "toolmessagechunk": "tool",
    "function": "function",
    "functionmessage": "function",
    "functionmessagechunk": "function",
    "chat": "chat",
    "chatmessage": "chat",
    "chatmessagechunk": "chat",
}

_AI_FIELDS = (
    "id",
    "name",
    "additional_kwargs",
    "response_metadata",
    "usage_metadata",
    "invalid_tool_calls",
)
_COMMON_FIELDS = ("id", "name", "additional_kwargs", "response_metadata")


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict, from a dict, a JSON string or a Python-repr string.

    LangGraph ToolNode runs store `{"input": "{'query': 'x'}"}`, which is not JSON, so
    `ast.literal_eval` is the second attempt; an empty string means no arguments.
    """
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except ValueError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
                raise MessageDecodeError(
                    f"tool-call arguments are neither JSON nor a Python literal: {text[:80]!r}"
                ) from exc
        if isinstance(value, dict):
            return value
        return {"input": value}
    raise MessageDecodeError(
        f"tool-call arguments must be a dict or a string, got {type(raw).__name__}"
    )


def _tool_call(raw: Any) -> dict[str, Any]:
    """One tool call in LangChain form from any of the five encodings, its name and id
    checked to be strings (LangChain rejects anything else)."""
    call = _tool_call_fields(raw)
    if not isinstance(call["name"], str):
        raise MessageDecodeError(f"tool call name: expected a string, got {describe(call['name'])}")
    if not isinstance(call["id"], str | None):
        raise MessageDecodeError(f"tool call id: expected a string, got {describe(call['id'])}")
    return call


def _tool_call_fields(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise MessageDecodeError(f"a tool call must be an object, got {type(raw).__name__}")
    if "function" in raw and isinstance(raw["function"], dict):  # OpenAI chat
        fn = raw["function"]
        return {
            "name": fn.get("name") or "",
            "args": parse_arguments(fn.get("arguments")),
            "id": raw.get("id"),
            "type": "tool_call",
        }
    if raw.get("type") == "tool_use":  # Anthropic block
        return {
            "name": raw.get("name") or "",
            "args": parse_arguments(raw.get("input")),
            "id": raw.get("id"),
            "type": "tool_call",
        }
    if raw.get("type") == "function_call":  # OpenAI Responses item
        return {
            "name": raw.get("name") or "",
            "args": parse_arguments(raw.get("arguments")),
            "id": raw.get("call_id") or raw.get("id"),
            "type": "tool_call",
        }
    if "name" in raw:  # LangChain tool_call, v1 tool_call block, or streaming chunk
        args = raw.get("args", raw.get("arguments", raw.get("input")))
        return {
            "name": raw["name"] or "",
            "args": parse_arguments(args),
            "id": raw.get("id"),
            "type": "tool_call",
        }
    raise MessageDecodeError(f"unrecognised tool call with keys {sorted(raw)}")


def _listed(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise MessageDecodeError(f"field {field!r}: expected a list, got {describe(value)}")
    return value


def _tool_calls_of(fields: dict[str, Any], content: Any) -> list[dict[str, Any]]:
    """The calls of an AI message, taken from the first encoding that has them (counted once)."""
    for key in ("tool_calls", "tool_call_chunks"):
        calls = fields.get(key)
        if calls:
            return [_tool_call(c) for c in _listed(calls, key)]
    legacy = (fields.get("additional_kwargs") or {}).get("tool_calls")
    if legacy:
        return [_tool_call(c) for c in _listed(legacy, "additional_kwargs.tool_calls")]
    if isinstance(content, list):
        return [
            _tool_call(b)
            for b in content
            if isinstance(b, dict) and b.get("type") in ("tool_use", "tool_call", "function_call")
        ]
    return []


def _content(value: Any) -> str | list[Any]:
    if value is None:
        return ""
    if isinstance(value, str | list):
        return value
    if isinstance(value, dict):
        return [value]
    raise MessageDecodeError(
        f"message content must be a string or a list, got {type(value).__name__}"
    )


_FIELD_TYPES: dict[str, tuple[type, str]] = {
    "id": (str, "a string"),
    "name": (str, "a string"),
    "additional_kwargs": (dict, "an object"),
    "response_metadata": (dict, "an object"),
    "usage_metadata": (dict, "an object"),
    "invalid_tool_calls": (list, "a list"),
    "status": (str, "a string"),
}
_USAGE_COUNTS = ("input_tokens", "output_tokens", "total_tokens")


def _checked(fields: dict[str, Any]) -> None:
    """Check the fields `build` passes to LangChain, so a wrong type is named, not a pydantic
    traceback."""
    for key, (kind, expected) in _FIELD_TYPES.items():
        value = fields.get(key)
        if value is not None and not isinstance(value, kind):
            raise MessageDecodeError(f"field {key!r}: expected {expected}, got {describe(value)}")
    for call in fields.get("invalid_tool_calls") or []:
        if not isinstance(call, dict):
            raise MessageDecodeError(
                f"field 'invalid_tool_calls': expected a list of objects, got {describe(call)}"
            )
    usage = fields.get("usage_metadata")
    if isinstance(usage, dict):
        for key in _USAGE_COUNTS:
            value = usage.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise MessageDecodeError(
                    f"field 'usage_metadata.{key}': expected a whole number, got {describe(value)}"
                )


def build(kind: str, fields: dict[str, Any]) -> BaseMessage:
    """A LangChain message of canonical `kind` from a dict of its fields.

    Only fields LangChain knows are passed on, so exports with extra keys still load. Their
    types are checked first; anything LangChain still rejects is reported the same way.
    """
    if not isinstance(fields, dict):
        raise MessageDecodeError(f"message fields: expected an object, got {describe(fields)}")
    _checked(fields)
    try:
        return _build(kind, fields)
    except MessageDecodeError:
        raise
    except ValueError as exc:  # pydantic's ValidationError: "N errors for X / field / reason"
        detail = " ".join(line.strip() for line in str(exc).splitlines()[1:3])
        raise MessageDecodeError(f"LangChain rejected the message: {detail or exc}") from None


def _build(kind: str, fields: dict[str, Any]) -> BaseMessage:
    content = _content(fields.get("content"))
    if kind == "ai":
        kwargs = {k: fields[k] for k in _AI_FIELDS if fields.get(k) is not None}
        kwargs["tool_calls"] = _tool_calls_of(fields, content)
        if kwargs.get("invalid_tool_calls") is None:
            kwargs.pop("invalid_tool_calls", None)
        return AIMessage(content=content, **kwargs)
    kwargs = {k: fields[k] for k in _COMMON_FIELDS if fields.get(k) is not None}
    if kind == "human":
        return HumanMessage(content=content, **kwargs)
    if kind == "system":
        return SystemMessage(content=content, **kwargs)
    if kind == "tool":
        call_id = fields.get("tool_call_id")
        if not call_id:
            raise MessageDecodeError(
                "tool message has no tool_call_id (expected the id of its call)"
            )
        for extra in ("status", "artifact"):
            if fields.get(extra) is not None:
                kwargs[extra] = fields[extra]
        return ToolMessage(content=content, tool_call_id=str(call_id), **kwargs)
    if kind == "function":
        kwargs.setdefault("name", fields.get("name") or "")
        return FunctionMessage(content=content, **kwargs)
    if kind == "chat":
        return ChatMessage(content=content, role=str(fields.get("role") or "chat"), **kwargs)
    raise MessageDecodeError(f"unknown message type {kind!r}")


def _kind(name: Any) -> str:
    kind = _TYPE_ALIASES.get(str(name).lower()) if name is not None else None
    if kind is None:
        raise MessageDecodeError(
            f"unknown message type {name!r} (expected human/user, ai/assistant, system, tool, "
            "function or chat)"
        )
    return kind


def _from_anthropic_user(msg: dict[str, Any]) -> list[BaseMessage]:
    """An Anthropic user turn: tool_result blocks become ToolMessages, the rest one HumanMessage."""
    content = msg.get("content")
    if not isinstance(content, list) or not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    ):
        return [build("human", msg)]
    out: list[BaseMessage] = []
    rest = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            inner = block.get("content")
            status = "error" if block.get("is_error") else "success"
            out.append(
                ToolMessage(
                    content=_content(inner),
                    tool_call_id=str(block.get("tool_use_id") or ""),
                    status=status,
                )
            )
        else:
            rest.append(block)
    if rest:
        out.append(HumanMessage(content=rest))
    return out


def _from_role_dict(msg: dict[str, Any]) -> list[BaseMessage]:
    kind = _kind(msg["role"])
    if kind == "human":
        return _from_anthropic_user(msg)
    return [build(kind, msg)]


def _from_repr(text: str) -> BaseMessage | None:
    """`HumanMessage(content='x', id='...')` as LangGraph chain runs store it, or None."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    kind = _TYPE_ALIASES.get(node.func.id.lower())
    if kind is None:
        return None
    fields: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            continue
        try:
            fields[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, SyntaxError):
            continue  # a non-literal field such as a nested object repr: not needed to replay
    if "content" not in fields and node.args:
        try:
            fields["content"] = ast.literal_eval(node.args[0])
        except (ValueError, SyntaxError):
            return None
    return build(kind, fields)


LC_ESCAPED = "__lc_escaped__"
"""LangChain's serializer (`dumpd`) wraps a plain dict that has an `lc` key, such as tool
arguments `{"lc": 1}`, as `{"__lc_escaped__": {...}}` so loading cannot mistake it for a
serialized object; the constructor form is read back through `unescape_lc`."""


def unescape_lc(value: Any) -> Any:
    """`value` with every `{"__lc_escaped__": inner}` wrapper replaced by `inner` (the user's
    own dict, as `langchain_core.load` restores it). Containers without a wrapper come back as
    the same objects: only the path to a wrapper is copied, so the common case allocates nothing.
    """
    if isinstance(value, dict):
        if len(value) == 1 and LC_ESCAPED in value:
            return value[LC_ESCAPED]
        items: Iterable[tuple[Any, Any]] = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return value
    out: Any = None
    for key, item in items:
        if isinstance(item, dict | list):
            new = unescape_lc(item)
            if new is not item:
                if out is None:
                    out = value.copy()
                out[key] = new
    return value if out is None else out


def decode_message(raw: Any) -> list[BaseMessage]:
    """Decode one encoded message; Anthropic user turns may yield several messages."""
    if isinstance(raw, BaseMessage):
        return [raw]
    if isinstance(raw, str):
        parsed = _from_repr(raw) if raw.endswith(")") and "(" in raw else None
        return [parsed if parsed is not None else HumanMessage(content=raw)]
    if isinstance(raw, list | tuple) and len(raw) == 2 and all(isinstance(x, str) for x in raw):
        return [build(_kind(raw[0]), {"content": raw[1]})]
    if not isinstance(raw, dict):
        raise MessageDecodeError(f"a message must be an object, got {type(raw).__name__}")
    if isinstance(raw.get("id"), list) and isinstance(raw.get("kwargs"), dict):  # lc constructor
        return [build(_kind(raw["id"][-1]), unescape_lc(raw["kwargs"]))]
    if isinstance(raw.get("data"), dict) and "type" in raw:  # messages_to_dict
        return [build(_kind(raw["type"]), raw["data"])]
    if "role" in raw and raw.get("type") in (None, "message"):  # OpenAI / Anthropic / Responses
        return _from_role_dict(raw)
    kind = raw.get("type")
    if kind in ("function_call", "tool_use"):
        return [AIMessage(content="", tool_calls=[_tool_call(raw)])]
    if kind == "function_call_output":
        return [
            ToolMessage(content=_content(raw.get("output")), tool_call_id=str(raw.get("call_id")))
        ]
    if (kind is not None and "content" in raw) or kind in ("ai", "human", "system", "tool"):
        return [build(_kind(kind), raw)]
    raise MessageDecodeError(
        "unrecognised message: expected an lc constructor dict, a model_dump dict with 'type', "
        f"a messages_to_dict entry, or a role dict; got keys {sorted(raw)[:8]}"
    )


Memo = dict[tuple[Any, ...], tuple[Any, list[BaseMessage]]]


def _memo_key(raw: Any) -> tuple[Any, ...] | None:
    """A cheap key for a raw message, or None when it has neither id nor string content."""
    if not isinstance(raw, dict):
        return None
    body = raw.get("kwargs") if isinstance(raw.get("kwargs"), dict) else raw.get("data", raw)
    if not isinstance(body, dict):
        return None
    content = body.get("content")
    msg_id = body.get("id")
    if not isinstance(msg_id, str | None) or (msg_id is None and not isinstance(content, str)):
        return None
    return (msg_id, content if isinstance(content, str) else None, len(raw))


def decode_messages(raw: Iterable[Any], memo: Memo | None = None) -> list[BaseMessage]:
    """Decode a message list, merging OpenAI Responses `function_call` items into their turn.

    Responses items list each call as its own item after the assistant message; LangChain keeps
    them on one AIMessage, which is what token counting and tool pairing expect.

    `memo` lets a loader decode each distinct message once: every model call of a LangSmith
    export repeats the whole history, so without it decoding is quadratic in pydantic work.
    A hit is only used when the raw encodings are equal, so it never changes the result.
    """
    if not isinstance(raw, list | tuple):
        raise MessageDecodeError(f"expected a list of messages, got {describe(raw)}")
    out: list[BaseMessage] = []
    for index, item in enumerate(raw):
        key = _memo_key(item) if memo is not None else None
        hit = memo.get(key) if memo is not None and key is not None else None
        if hit is not None and hit[0] == item:
            decoded = hit[1]
        else:
            try:
                decoded = decode_message(item)
            except MessageDecodeError as exc:  # say which message of the list
                raise MessageDecodeError(f"message {index}: {exc}") from exc
            if memo is not None and key is not None:
                memo[key] = (item, decoded)
        for msg in decoded:
            is_call_item = isinstance(item, dict) and item.get("type") == "function_call"
            if is_call_item and out and isinstance(out[-1], AIMessage):
                prev = out[-1]
                out[-1] = prev.model_copy(
                    # a function_call item decodes to an AIMessage holding its call
                    update={"tool_calls": [*prev.tool_calls, *cast(AIMessage, msg).tool_calls]}
                )
            else:
                out.append(msg)
    return out
