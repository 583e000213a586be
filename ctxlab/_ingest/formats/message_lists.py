"""Plain message lists as traces: OpenAI chat, Anthropic Messages, LangChain dumps.

These files carry no per-call inputs, so each AIMessage is taken as one call that saw the
whole prefix (`ctxlab._trace.from_messages`). Shapes: a bare list of messages in any encoding;
`{"messages": [...], "tools"?, "model"?}` (OpenAI request / fine-tuning line, langsmith-fetch);
`{"system", "messages", "tools"?}` (Anthropic request).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import SystemMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats.fields import obj_or_empty
from ctxlab._ingest.formats.messages import MessageDecodeError, decode_messages
from ctxlab._messages import first_orphan_result
from ctxlab._trace import Trace, from_messages

_MESSAGE_KEYS = ("role", "lc", "kwargs", "data")


def looks_like_message(obj: Any) -> bool:
    """Whether a JSON value is one message in some encoding we decode."""
    if not isinstance(obj, dict):
        return False
    if any(k in obj for k in _MESSAGE_KEYS):
        return True
    return obj.get("type") in (
        "human",
        "ai",
        "system",
        "tool",
        "function_call",
        "function_call_output",
        "message",
    ) and ("content" in obj or "data" in obj or "arguments" in obj or "output" in obj)


def looks_like_message_list(value: Any) -> bool:
    if isinstance(value, dict):
        value = value.get("messages")
    return isinstance(value, list) and bool(value) and all(looks_like_message(m) for m in value)


def _format_name(messages: list[Any], container: dict[str, Any]) -> str:
    first = messages[0] if messages else {}
    if "system" in container or any(
        isinstance(m.get("content"), list)
        and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result")
            for b in m["content"]
        )
        for m in messages
        if isinstance(m, dict)
    ):
        return "anthropic-messages"
    if "role" in first:
        return "openai-messages"
    return "langchain-messages"


def trace_from_list(value: Any, *, source: str, trace_id: str, line: int | None = None) -> Trace:
    """One trace from a message-list file (or one JSONL line of one)."""
    container: dict[str, Any] = value if isinstance(value, dict) else {}
    raw = container.get("messages", value)
    try:
        messages = decode_messages(raw)
    except MessageDecodeError as exc:
        raise TraceFormatError(str(exc), source=source, line=line) from exc
    system = container.get("system")
    if system and not (messages and isinstance(messages[0], SystemMessage)):
        messages.insert(0, SystemMessage(content=system))
    orphan = first_orphan_result(messages)
    if orphan is not None:
        i, result = orphan
        raise TraceFormatError(
            f"message {i}: tool result for call {result.tool_call_id!r} has no matching "
            "tool call in an earlier assistant message",
            source=source,
            line=line,
        )
    metadata = obj_or_empty(container, "metadata")
    trace = from_messages(
        messages,
        trace_id=str(container.get("trace_id") or trace_id),
        format=_format_name(raw, container),
        source=source,
        model=container.get("model") or metadata.get("ls_model_name"),
        provider=metadata.get("ls_provider"),
        tools=container.get("tools") or [],
    )
    return trace
