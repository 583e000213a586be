"""The request-only copies Deep Agents' `SummarizationMiddleware` sends (deepagents 0.7.32):
`write_file`/`edit_file` calls with long arguments cut, and kept AIMessages without the
reasoning bound to the history a summary replaced. Each is memoised per message object, and
each has a size form that needs no copy (the feed measures, only a summariser reads copies).
See docs/deepagents.md §4 and §5.5.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolCall

from ctxlab._cost import tokens as tk
from ctxlab._replay.policies.deepagents.filesystem import FILE_MUTATION_TOOLS, parallel_mutation

TRUNCATE_ARGS_TOOLS = frozenset({"write_file", "edit_file"})
"""Tools whose long string arguments argument truncation cuts."""

TRUNCATED_ARG_HEAD = 20
"""Characters of a cut argument kept before the truncation text."""

NATIVE_REASONING_BLOCK_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning_content"})
"""Reasoning block types of the Anthropic and Bedrock Converse native formats."""

BEDROCK_PROVIDERS = frozenset({"bedrock", "bedrock_converse"})
"""`model_provider` values of Amazon Bedrock, whose Claude models bind reasoning too."""

NONE_REJECTED: frozenset[Any] = frozenset()

REASONING_SIZE = "deepagents-no-reasoning-size"
"""The memo key (`tokens.derived`) of an AIMessage's `size_without_reasoning`."""

CALL_FACTS = "deepagents-calls"
"""The memo key (`tokens.derived`) of an AIMessage's `call_facts`."""


def bound_reasoning_types(message: AIMessage) -> frozenset[str]:
    """`_bound_reasoning_types`: block types carrying reasoning bound to earlier history.

    Only Claude binds reasoning (also served by Bedrock, told by `model_name`); an untagged
    message is checked for the native block types, one of another provider keeps all."""
    provider = message.response_metadata.get("model_provider")
    if provider is None:
        return NATIVE_REASONING_BLOCK_TYPES
    model = str(message.response_metadata.get("model_name", "")).lower()
    if provider == "anthropic" or (
        provider in BEDROCK_PROVIDERS and ("claude" in model or "anthropic" in model)
    ):
        return NATIVE_REASONING_BLOCK_TYPES | {"reasoning"}
    return frozenset()


def drop_bound_reasoning(message: BaseMessage) -> BaseMessage:
    """`_drop_bound_reasoning`: a copy of an AIMessage without its bound reasoning blocks, or
    `message` itself when it has none."""
    if not isinstance(message, AIMessage) or not isinstance(message.content, list):
        return message
    bound = bound_reasoning_types(message)
    content = [b for b in message.content if not (isinstance(b, dict) and b.get("type") in bound)]
    if len(content) == len(message.content):
        return message
    return message.model_copy(update={"content": content})


def dropped(message: BaseMessage) -> BaseMessage:
    """`drop_bound_reasoning(message)`, memoised per message (only real copies are kept: a
    memo entry must not refer to its own message, or the message would never be freed)."""
    copy = tk.derived(message, "deepagents-no-reasoning", lambda: _copy_without_reasoning(message))
    return message if copy is None else copy


def _copy_without_reasoning(message: BaseMessage) -> BaseMessage | None:
    copy = drop_bound_reasoning(message)
    return None if copy is message else copy


def size_without_reasoning(message: AIMessage) -> tk.Size | None:
    """Size of `drop_bound_reasoning(message)` (None if it drops nothing), without the copy:
    the blocks it drops are subtracted from the measured size."""
    if not isinstance(message.content, list):
        return None
    bound = bound_reasoning_types(message)
    gone = [b for b in message.content if isinstance(b, dict) and b.get("type") in bound]
    if not gone:
        return None
    size = tk.cached_size(message)
    chars, images = tk.blocks_size(gone)
    return tk.Size(size.chars - chars, size.images - images)


def cut_argument(value: str, text: str) -> str:
    """A long argument as the request holds it."""
    return value[:TRUNCATED_ARG_HEAD] + text


def truncated(message: AIMessage, max_length: int, text: str) -> AIMessage:
    """`message` with its long `write_file`/`edit_file` arguments cut, as the request holds it
    (memoised per message: every replay that sends it sends the same copy)."""

    def make() -> AIMessage:
        calls = []
        for call in message.tool_calls:
            if call["name"] in TRUNCATE_ARGS_TOOLS:
                args = call.get("args", {})
                new = {
                    k: cut_argument(v, text) if isinstance(v, str) and len(v) > max_length else v
                    for k, v in args.items()
                }
                if new != args:
                    call = {**call, "args": new}
            calls.append(call)
        short = message.model_copy()
        short.tool_calls = calls
        return short

    return tk.derived(message, ("deepagents-truncated", max_length, text), make)


def call_facts(
    message: AIMessage,
) -> tuple[dict[Any, ToolCall], frozenset[Any], tuple[str, ...]]:
    """What the feed needs of an AIMessage with tool calls, in one pass over them (once per
    message, whatever the truncation settings): its calls by id (the first of equal ids, as a
    search would find it); the ids of those deepagents rejects as same-path parallel
    mutations; and the string arguments of its `write_file`/`edit_file` calls, which argument
    truncation may cut (`truncation_growth`)."""
    by_id: dict[Any, ToolCall] = {}
    mutations = 0
    cuttable: list[str] = []
    for call in message.tool_calls:
        by_id.setdefault(call.get("id"), call)
        name = call["name"]
        mutations += name in FILE_MUTATION_TOOLS
        if name in TRUNCATE_ARGS_TOOLS:
            cuttable.extend(v for v in call.get("args", {}).values() if isinstance(v, str))
    rejected = NONE_REJECTED
    if mutations > 1:
        rejected = frozenset(i for i, c in by_id.items() if parallel_mutation(message, c))
    return by_id, rejected, tuple(cuttable)


def truncation_growth(
    message: AIMessage, cuttable: tuple[str, ...], max_length: int, text: str
) -> int | None:
    """The characters argument truncation adds to `message`'s size (negative: it shrinks),
    given its cuttable arguments (`call_facts`); None when truncation leaves it as it is.

    Found without building the copy (only a summary or usage scaling needs that): the copy
    differs in its tool calls alone, whose repr the counter charges only when the content is
    a string, and there only by the values cut."""
    counted = not isinstance(message.content, list)
    delta = None
    for value in cuttable:
        if len(value) > max_length:
            short = cut_argument(value, text)
            if short != value:
                grown = tk.repr_len(short) - tk.repr_len(value) if counted else 0
                delta = (delta or 0) + grown
    return delta
