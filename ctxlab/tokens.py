"""Token counters, bit-for-bit compatible with LangChain's `count_tokens_approximately`.

Deep Agents decides everything (offload, truncation, summarisation, budget) with
`langchain_core.messages.utils.count_tokens_approximately`. That function sums, per message,
`ceil(chars / chars_per_token) + 3`, so a count over a list is the sum of the per-message counts
plus the tool schemas. ctxlab exploits exactly that: each message is measured once
(`message_chars`), and any context count becomes a sum the replay engine keeps as prefix sums.

The spec (`deepagents-semantics.md` §2) lists the rules; the tests check equality with the real
function on generated messages.
"""

from __future__ import annotations

import json
import math
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

CHARS_PER_TOKEN = 4.0
"""LangChain's default; every chat model except ChatAnthropic is counted with it."""
ANTHROPIC_CHARS_PER_TOKEN = 3.3
"""`_get_approximate_token_counter` uses this for models whose `_llm_type` is `anthropic-chat`."""
EXTRA_TOKENS_PER_MESSAGE = 3
TOKENS_PER_IMAGE = 85


def _role(message: BaseMessage) -> str:
    """The OpenAI role string LangChain adds to every message's character count."""
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, SystemMessage):
        return str(message.additional_kwargs.get("__openai_role__", "system"))
    if isinstance(message, FunctionMessage):
        return "function"
    if isinstance(message, ChatMessage):
        return message.role
    raise ValueError(f"Unknown message type {type(message).__name__}")


@dataclass(frozen=True, slots=True)
class Size:
    """What the approximate counter sees of one message: characters and image blocks."""

    chars: int
    images: int = 0

    def tokens(self, chars_per_token: float = CHARS_PER_TOKEN) -> int:
        """Tokens this message adds to any approximate count that includes it."""
        return (
            math.ceil(self.chars / chars_per_token)
            + EXTRA_TOKENS_PER_MESSAGE
            + TOKENS_PER_IMAGE * self.images
        )


def message_size(message: BaseMessage) -> Size:
    """Characters and images of one message, by the rules of `count_tokens_approximately`."""
    chars = 0
    images = 0
    content: Any = message.content
    if isinstance(content, str):
        chars += len(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                chars += len(block)
            elif isinstance(block, dict):
                kind = block.get("type", "")
                if kind in {"image", "image_url"}:
                    images += 1
                elif kind == "text":
                    chars += len(block.get("text", ""))
                else:
                    chars += len(repr(block))
            else:
                chars += len(repr(block))
    else:
        chars += len(repr(content))
    if isinstance(message, AIMessage) and not isinstance(content, list) and message.tool_calls:
        chars += len(repr(message.tool_calls))
    if isinstance(message, ToolMessage):
        chars += len(message.tool_call_id)
    chars += len(_role(message))
    if message.name:
        chars += len(message.name)
    return Size(chars, images)


_SIZES: dict[int, tuple[weakref.ref, Size]] = {}


def cached_size(message: BaseMessage) -> Size:
    """`message_size`, measured once per message object for as long as the object lives.

    Replaying one trace under many policies (sliders, sweeps) then pays the measuring (the
    `repr` of tool calls and content blocks, proportional to the text) once. Messages are
    treated as immutable, as LangChain state treats them.
    """
    key = id(message)
    hit = _SIZES.get(key)
    if hit is not None and hit[0]() is message:
        return hit[1]
    size = message_size(message)
    _SIZES[key] = (weakref.ref(message, lambda _ref, key=key: _SIZES.pop(key, None)), size)
    return size


_DERIVED: dict[tuple[int, Any], tuple[weakref.ref, Any]] = {}


def derived(message: BaseMessage, key: Any, make: Callable[[], Any]) -> Any:
    """`make()`, memoised per live message object and `key` (for values derived from a message
    alone, like its truncated or offloaded form), so repeated replays build them once."""
    slot = (id(message), key)
    hit = _DERIVED.get(slot)
    if hit is not None and hit[0]() is message:
        return hit[1]
    value = make()
    _DERIVED[slot] = (weakref.ref(message, lambda _ref, slot=slot: _DERIVED.pop(slot, None)), value)
    return value


def message_tokens(message: BaseMessage, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Approximate tokens of one message (what a one-message `count_tokens_approximately` says)."""
    return cached_size(message).tokens(chars_per_token)


def tool_schema_chars(tools: Iterable[Any]) -> int:
    """Characters the approximate counter charges for tool schemas.

    Dicts are dumped as given; `BaseTool`s as `{name, description, parameters}` with the schema's
    own title and description dropped, exactly as LangChain does.
    """
    total = 0
    for tool in tools:
        if isinstance(tool, dict):
            as_dict = tool
        else:
            from langchain_core.utils.pydantic import model_json_schema

            schema = tool.tool_call_schema
            parameters = (
                dict(schema) if isinstance(schema, dict) else dict(model_json_schema(schema))
            )
            parameters.pop("title", None)
            parameters.pop("description", None)
            as_dict = {"name": tool.name, "description": tool.description, "parameters": parameters}
        total += len(json.dumps(as_dict))
    return total


def tool_schema_tokens(tools: Sequence[Any], chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Tokens of the tool schemas in a request (0 without tools, like LangChain)."""
    if not tools:
        return 0
    return math.ceil(tool_schema_chars(tools) / chars_per_token)


def count_tokens(
    messages: Sequence[BaseMessage],
    *,
    tools: Sequence[Any] = (),
    chars_per_token: float = CHARS_PER_TOKEN,
) -> int:
    """Approximate count of a whole request, without usage scaling.

    Equal to `count_tokens_approximately(messages, chars_per_token=..., tools=...)`; kept here so
    callers need no LangChain import and so tests can pin the equivalence.
    """
    return tool_schema_tokens(tools, chars_per_token) + sum(
        message_tokens(m, chars_per_token) for m in messages
    )


def usage_scale(
    messages: Sequence[BaseMessage],
    per_message_tokens: Sequence[int],
    tools_tokens: int,
) -> float:
    """The factor `use_usage_metadata_scaling=True` applies to an approximate count (1.0 if none).

    LangChain scales by the last AIMessage's reported `total_tokens` over the approximate count up
    to and including it (tool schemas included), clamped to [1, 1.25], and only when more than one
    message is counted and every AIMessage names the same `model_provider`.
    """
    if len(messages) <= 1:
        return 1.0
    provider: str | None = None
    running = float(tools_tokens)
    last_total: int | None = None
    at_last: float | None = None
    for message, tokens in zip(messages, per_message_tokens, strict=True):
        running += tokens
        if isinstance(message, AIMessage):
            this = message.response_metadata.get("model_provider")
            if provider is None:
                provider = this
            elif this != provider:
                return 1.0
            usage = message.usage_metadata
            if usage and isinstance(usage.get("total_tokens"), int):
                last_total = usage["total_tokens"]
                at_last = running
    if provider is None or last_total is None or not at_last:
        return 1.0
    return min(1.25, max(1.0, last_total / at_last))
