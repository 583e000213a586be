"""Token counters, bit-for-bit compatible with LangChain's `count_tokens_approximately`.

Deep Agents decides everything (offload, truncation, summarisation, budget) with
`langchain_core.messages.utils.count_tokens_approximately`. That function sums, per message,
`ceil(chars / chars_per_token) + 3`, so a count over a list is the sum of the per-message counts
plus the tool schemas. ctxlab exploits exactly that: each message is measured once
(`message_chars`), and any context count becomes a sum the replay engine keeps as prefix sums.

docs/deepagents.md §2 lists the rules; the tests check equality with the real
function on generated messages.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ctxlab._cost.redacted import hidden_in
from ctxlab._weak_memo import WeakMemo

CHARS_PER_TOKEN = 4.0
"""LangChain's default; every chat model except ChatAnthropic is counted with it."""
ANTHROPIC_CHARS_PER_TOKEN = 3.3
"""`_get_approximate_token_counter` uses this for models whose `_llm_type` is `anthropic-chat`."""
EXTRA_TOKENS_PER_MESSAGE = 3
TOKENS_PER_IMAGE = 85


_ROLES: dict[type, str] = {
    AIMessage: "assistant",
    HumanMessage: "user",
    ToolMessage: "tool",
    FunctionMessage: "function",
}
"""Roles of the exact message classes; subclasses and the rest go through `openai_role`."""


def openai_role(message: BaseMessage) -> str:
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


_PLAIN_ASCII = bytes(c for c in range(0x20, 0x7F) if c not in b"'\"\\")
"""Printable ASCII that `repr` copies as is (everything but quotes and the backslash)."""
_SHORT = 256
"""Below this many characters `repr` itself is cheaper than counting escapes."""
_IMAGE_TYPES = frozenset({"image", "image_url"})
_KEYS: dict[str, int] = {}
"""repr lengths of dict keys seen (`type`, `id`, `input`, `file_path`, ...: a few, again and
again); bounded, in case some dicts use data as keys."""


def repr_len(obj: Any) -> int:
    """`len(repr(obj))`, exactly, without building the repr of long strings.

    The counter charges `len(repr(...))` for tool calls and non-text content blocks, whose bulk
    is long strings (file contents in `write_file` arguments). `repr` of a str costs ~4 ns per
    character; an ASCII string's repr length follows from counting the characters `repr`
    escapes, which the bytes `translate` below does at ~0.5 ns per character. Dicts, lists and
    tuples are summed from their items with the separators `repr` puts between them; anything
    else (numbers, non-ASCII or short strings, other objects) is measured with `repr` itself.
    """
    try:
        return _repr_len(obj)
    except RecursionError:  # a self-referencing container: repr prints it as "{...}"
        return len(repr(obj))


def _repr_len(obj: Any) -> int:
    cls = type(obj)
    if cls is str:
        return len(repr(obj)) if len(obj) < _SHORT else _str_repr_len(obj)
    if cls is dict:
        total = 4 * len(obj) or 2  # "{", "}", ": " per item, ", " between items
        values: Iterable[Any] = obj.values()
        for key in obj:
            known = _KEYS.get(key) if type(key) is str else None
            if known is None:
                known = _repr_len(key)
                if type(key) is str and len(_KEYS) < 4096:
                    _KEYS[key] = known
            total += known
    elif cls is list or cls is tuple:
        n = len(obj)
        total = 3 if n == 1 and cls is tuple else 2 * n or 2  # "(x,)"; brackets, ", " between
        values = obj
    else:
        return len(repr(obj))
    for value in values:  # leaves inline: a call per item would cost more than most leaves
        kind = type(value)
        if kind is str:
            total += len(repr(value)) if len(value) < _SHORT else _str_repr_len(value)
        elif kind is dict or kind is list or kind is tuple:
            total += _repr_len(value)
        else:
            total += len(repr(value))
    return total


def _str_repr_len(text: str) -> int:
    """`len(repr(text))` of a long string."""
    if not text.isascii():
        return len(repr(text))
    # Left: quotes, backslashes and control characters. `repr` writes \\ \n \r \t as two
    # characters, other controls as \xNN (four), and escapes the quote it uses.
    special = text.encode().translate(None, _PLAIN_ASCII)
    single, double = special.count(b"'"), special.count(b'"')
    two = special.count(b"\\") + special.count(b"\n") + special.count(b"\r") + special.count(b"\t")
    four = len(special) - single - double - two
    return len(text) + 2 + two + 3 * four + (single if single and double else 0)


class Size(NamedTuple):
    """What the approximate counter sees of one message: characters and image blocks.

    A named tuple: replays build one per derived message form, and a frozen dataclass costs
    several times as much to construct.
    """

    chars: int
    images: int = 0

    def tokens(self, chars_per_token: float = CHARS_PER_TOKEN) -> int:
        """Tokens this message adds to any approximate count that includes it."""
        return (
            math.ceil(self.chars / chars_per_token)
            + EXTRA_TOKENS_PER_MESSAGE
            + TOKENS_PER_IMAGE * self.images
        )


def _is_image(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type", "") in _IMAGE_TYPES


def blocks_size(blocks: Iterable[Any]) -> tuple[int, int]:
    """(characters, image blocks) the counter charges for a list of content blocks."""
    chars = images = 0
    for block in blocks:
        if isinstance(block, str):
            chars += len(block)
        elif isinstance(block, dict):
            kind = block.get("type", "")
            if kind == "text" and isinstance(text := block.get("text", ""), str):
                chars += len(text)
            elif kind in _IMAGE_TYPES:
                images += 1
            else:
                chars += repr_len(block)
        else:
            chars += repr_len(block)
    return chars, images


def _measure(message: BaseMessage) -> tuple[int, int]:
    """(characters, image blocks) of one message, by the rules of `count_tokens_approximately`."""
    content: Any = message.content
    images = 0
    listed = isinstance(content, list)  # tool calls are in the blocks (Anthropic format)
    if isinstance(content, str):
        chars = len(content)
    elif listed:
        chars, images = blocks_size(content)
    else:
        chars = repr_len(content)
    if not listed and isinstance(message, AIMessage) and message.tool_calls:
        chars += repr_len(message.tool_calls) + hidden_in(message.tool_calls)
    # redaction markers count as the text they hide; an image block counts as an image
    # however long its (redacted) data URL was, as the unredacted block does
    chars += hidden_in([b for b in content if not _is_image(b)] if listed else content)
    if isinstance(message, ToolMessage):
        chars += len(message.tool_call_id)
    role = _ROLES.get(type(message))
    chars += len(role if role is not None else openai_role(message))
    name = message.name
    if name:
        chars += len(name)
    return chars, images


def message_size(message: BaseMessage) -> Size:
    """Characters and images of one message, by the rules of `count_tokens_approximately`."""
    return Size(*_measure(message))


_MEMO: WeakMemo[list[Any]] = WeakMemo()
"""Per live message: [chars (-1 until measured), images, {key: derived value}].

Messages are treated as immutable, as LangChain state treats them, so one trace replayed under
many policies (sliders, sweeps) is measured and derived once.
"""
_TABLE = _MEMO.table
"""The memo's own table, read directly by the loops over whole histories below."""


def _entry(message: BaseMessage) -> list[Any]:
    return _MEMO.setdefault(message, _new_values)


def _new_values() -> list[Any]:
    return [-1, 0, None]


def derived_each(
    messages: Iterable[BaseMessage], key: Any, make: Callable[[BaseMessage], Any]
) -> list[Any]:
    """`derived(message, key, lambda: make(message))` of each message, the memo lookup inlined
    (a summary reads one fact of every message it covers, at every summary of every replay)."""
    out = []
    table = _TABLE
    missing = _MISSING
    for message in messages:
        found = table.get(id(message))
        if found is not None and found[0]() is message:
            entry = found[1]
        else:
            entry = _MEMO.put(message, _new_values())
        values = entry[2]
        if values is None:
            values = entry[2] = {}
        value = values.get(key, missing)  # one hash of the (tuple) key, not two
        if value is missing:
            value = values[key] = make(message)
        out.append(value)
    return out


_MISSING = object()
"""`derived_each`'s marker for a value not derived yet (a derived value may be None)."""


def cached_size(message: BaseMessage) -> Size:
    """`message_size`, measured once per message object for as long as the object lives."""
    entry = _entry(message)
    if entry[0] < 0:
        entry[0], entry[1] = _measure(message)
    return Size(entry[0], entry[1])


def derived(message: BaseMessage, key: Any, make: Callable[[], Any]) -> Any:
    """`make()`, memoised per live message object and `key` (for values derived from a message
    alone, like its truncated or offloaded form), so repeated replays build them once.

    The value must not refer to `message` itself: the memo would then keep it alive.
    """
    entry = _entry(message)
    values = entry[2]
    if values is None:
        values = entry[2] = {}
    elif key in values:
        return values[key]
    value = values[key] = make()
    return value


def message_tokens(message: BaseMessage, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Approximate tokens of one message (what a one-message `count_tokens_approximately` says)."""
    entry = _entry(message)
    if entry[0] < 0:
        entry[0], entry[1] = _measure(message)
    return (
        math.ceil(entry[0] / chars_per_token)
        + EXTRA_TOKENS_PER_MESSAGE
        + TOKENS_PER_IMAGE * entry[1]
    )


def tokens_list(
    messages: Iterable[BaseMessage], chars_per_token: float = CHARS_PER_TOKEN
) -> list[int]:
    """`message_tokens` of each message: the memo lookup inlined, for a whole history at once."""
    out = []
    table, ceil, extra, per_image = _TABLE, math.ceil, EXTRA_TOKENS_PER_MESSAGE, TOKENS_PER_IMAGE
    for message in messages:
        found = table.get(id(message))
        if found is not None and found[0]() is message:
            entry = found[1]
        else:
            entry = _MEMO.put(message, _new_values())
        if entry[0] < 0:
            entry[0], entry[1] = _measure(message)
        out.append(ceil(entry[0] / chars_per_token) + extra + per_image * entry[1])
    return out


def tool_schema_chars(tools: Iterable[Any]) -> int:
    """Characters the approximate counter charges for tool schemas.

    Dicts are dumped as given; `BaseTool`s as `{name, description, parameters}` with the schema's
    own title and description dropped, exactly as LangChain does.
    """
    total = 0
    for tool in tools:
        if isinstance(tool, dict):
            as_dict = tool
        elif not hasattr(tool, "tool_call_schema"):  # not a tool (a loaded `0`): as JSON
            total += len(json.dumps(tool, default=repr))
            continue
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
