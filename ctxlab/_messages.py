"""Facts about one message that several parts of ctxlab read, each defined once here.

Policies, metrics, summarisers and widgets all ask the same questions of a message: what is
its text, is it a summary a compaction inserted, which token bucket does it count in, which
file paths does it mention, how many characters make a token for the model that read it. When
each part answered on its own the answers drifted apart (the Scrubber sized blocks at 4.0
characters per token where the policy counted 3.3 for the same Claude model), so they all
import the answers from here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._cost.profiles import profile

AUTO: Literal["auto"] = "auto"
"""A parameter value meaning "what the upstream agent picks for the trace's model"."""

KINDS = ("system", "tools", "human", "ai", "tool_results", "stubs", "summary")
"""Token buckets of a request; `stubs` are offload placeholders (tool results, human messages)."""

SUMMARY_SOURCE = "summarization"
"""`additional_kwargs["lc_source"]` of the HumanMessage LangChain's and Deep Agents'
summarisation middleware insert (the marker both read back to recognise their own summary)."""

PATH = re.compile(r"(/(?<![^\s'\"(=]/)(?:[\w.\-/]+\.\w+|[\w.\-]+(?:/[\w.\-]+)+))")
r"""An absolute file path in running text: `/a/b.py`, or a directory path of two or more parts.
It must start the text or follow a space, quote, bracket or `=`, so URLs and fractions
(`https://x/y`, `3/4`) are not taken for paths.

Spelled out, that is `(?:(?<=[\s'"(=])|^)(/[\w.\-/]+\.\w+|/[\w.\-]+(?:/[\w.\-]+)+)`; this
form finds the same matches (tests/test_message_facts_paths.py) but starts with the slash and
checks the character before it afterwards, so the regex engine skips to each `/` at C speed
instead of testing a lookbehind at every character (the offline summariser reads every message
it covers, a new summary message at every summarisation)."""


def message_text(message: BaseMessage) -> str:
    """The text of a message: string content as is, else its text blocks joined by newlines.

    Non-text blocks (images, tool-use blocks, reasoning) are skipped so binary payloads do not
    count as text. This is how Deep Agents measures a message for eviction, so a policy that
    sizes text and a metric that searches it read the same characters. Blocks are joined with
    a newline (LangChain's `message.text` joins with nothing), which keeps the last line of one
    block from running into the first line of the next. Content that is not plain strings and
    `{"type": "text", "text": ...}` blocks goes through LangChain's public `content_blocks`
    translation, which maps provider formats (Anthropic, OpenAI Responses) to standard blocks.
    """
    content = message.content
    if isinstance(content, str):
        return content
    return tk.derived(message, "message_text", lambda: _blocks_text(message))


def _blocks_text(message: BaseMessage) -> str:
    """`message_text` of list content (remembered per message object: the translation through
    `content_blocks` costs tens of microseconds, and summarisers read a message many times)."""
    content = message.content
    if all(
        isinstance(b, str)
        or (
            isinstance(b, dict)
            and b.get("type") == "text"
            and isinstance(b.get("text"), str)
            and b.keys() <= {"type", "text"}
        )
        for b in content
    ):
        return "\n".join(b if isinstance(b, str) else b["text"] for b in content)
    # a text block without text (refused at load, possible in a Trace built by hand) is skipped
    blocks = message.content_blocks
    return "\n".join(
        b["text"] for b in blocks if b["type"] == "text" and isinstance(b.get("text"), str)
    )


def readable_text(message: BaseMessage) -> str:
    """`message_text` followed by the message's tool calls with their arguments, one a line:
    what a person reading the history needs to see of an assistant turn that only calls tools."""
    text = message_text(message)
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            text += f"\n[call {call['name']}] {call.get('args')}"
    return text


def is_summary(message: BaseMessage) -> bool:
    """A summary a compaction inserted: a HumanMessage marked `lc_source="summarization"`.

    The marker is what LangChain and Deep Agents themselves test, so a replay agrees with them
    on which message is a summary. (Loaders of recorded traces that lost the marker also match
    the upstream summary prefixes; that is a loader's heuristic, not this fact.)
    """
    return (
        isinstance(message, HumanMessage)
        and message.additional_kwargs.get("lc_source") == SUMMARY_SOURCE
    )


def summary_message(content: str | list) -> HumanMessage:
    """A summary HumanMessage marked the way the upstream middleware marks it."""
    return HumanMessage(content=content, additional_kwargs={"lc_source": SUMMARY_SOURCE})


def kind_of(message: BaseMessage) -> str:
    """The token bucket (`KINDS`) of an unedited message; other message classes count as human."""
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, AIMessage):
        return "ai"
    if isinstance(message, ToolMessage):
        return "tool_results"
    return "summary" if is_summary(message) else "human"


def paths_in(text: str) -> list[str]:
    """The absolute paths `text` mentions (`PATH`), in order, repeats kept."""
    return PATH.findall(text)


def first_orphan_result(messages: Sequence[BaseMessage]) -> tuple[int, ToolMessage] | None:
    """Index and message of the first tool result that answers no earlier assistant tool call,
    or None.

    Every loader checks its rebuilt history with this before handing it to policies (which may
    never split a call from its result); each raises its own error, located in its own terms.
    """
    called: set[str] = set()
    for i, msg in enumerate(messages):
        if isinstance(msg, AIMessage):
            called.update(call_id for c in msg.tool_calls if (call_id := c.get("id")))
        elif isinstance(msg, ToolMessage) and msg.tool_call_id not in called:
            return i, msg
    return None


def chars_per_token(
    model: str | None, provider: str | None = None, given: float | str | None = AUTO
) -> float:
    """Characters per token of LangChain's approximate counter for a chat model.

    `given` wins unless it is `"auto"` or None; then it is 3.3 for Anthropic chat models and
    4.0 for the rest, which is `_get_approximate_token_counter`'s choice and what Deep Agents
    reports. The provider comes from `provider`, a `provider:` prefix of `model` or the model
    name (`claude-*` is Anthropic), as `ctxlab._cost.profiles.profile` resolves it, so a trace that
    names only its model is counted as the policy counts it.
    """
    if given is not None and given != AUTO:
        return float(given)
    anthropic = profile(model, provider).is_anthropic
    return tk.ANTHROPIC_CHARS_PER_TOKEN if anthropic else tk.CHARS_PER_TOKEN


__all__ = [
    "first_orphan_result",
    "AUTO",
    "KINDS",
    "PATH",
    "SUMMARY_SOURCE",
    "chars_per_token",
    "is_summary",
    "kind_of",
    "message_text",
    "paths_in",
    "readable_text",
    "summary_message",
]
