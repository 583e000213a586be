"""Redacted or unparsable fields kept as text, with a note, never a refused file.

A shared trace often hides its texts and tool arguments behind markers
(`[REDACTED_TEXT len=N sha=...]`, `[REDACTED_ARGUMENTS len=N sha=...]`) while its usage stays
intact, and a producer may cut a long argument mid-JSON. Either way one field is not what the
format promises; the rest of the file is. Arguments that do not parse are kept as text under
`ARGUMENTS_TEXT`, markers stay as the text they are, and `notes` says both: the counter
charges each marker its `len=N` (`ctxlab._cost.redacted`), the harness presets fit what
the counts lack to the recorded usage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage

from ctxlab._cost.redacted import MARK
from ctxlab._ingest.formats.messages import MessageDecodeError, parse_arguments

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain_core.messages import BaseMessage
    from langchain_core.messages.tool import ToolCall

ARGUMENTS_TEXT = "arguments_text"
"""The key unparsable tool-call arguments are kept under, as the text the file holds."""


def arguments_or_text(raw: Any) -> tuple[dict[str, Any], bool]:
    """`parse_arguments(raw)`, or `{ARGUMENTS_TEXT: raw}` when `raw` is text that is neither
    JSON nor a Python literal (a redaction marker, a cut JSON object); the flag says which.
    Anything else that does not parse (a number, a list) still raises `MessageDecodeError`.

    Text that opens with a marker is kept without trying either parser: `[REDACTED_...` is
    neither JSON nor a Python literal, and the failed `ast.literal_eval` (a `compile`) was the
    largest single cost of loading a redacted Codex rollout (3,160 arguments)."""
    if isinstance(raw, str) and raw.lstrip().startswith(MARK):
        return {ARGUMENTS_TEXT: raw}, True
    try:
        return parse_arguments(raw), False
    except MessageDecodeError:
        if isinstance(raw, str):
            return {ARGUMENTS_TEXT: raw}, True
        raise


def _block_marked(block: Any) -> bool:
    """A content block whose text (or a tool result's text) holds a marker."""
    if type(block) is str:
        return MARK in block
    if type(block) is not dict:
        return False
    for key in ("text", "thinking", "content", "input"):
        value = block.get(key)
        if type(value) is str:
            if MARK in value:
                return True
        elif type(value) is list and any(_block_marked(b) for b in value):
            return True
    return False


def _calls(message: BaseMessage) -> list[ToolCall]:
    """A message's tool calls: only AI messages have any. (`getattr(m, "tool_calls", None)`
    went through pydantic's failing `__getattr__` on every other message, twice each: most of
    the notes' cost, a tenth of loading a small Codex rollout.)"""
    return message.tool_calls if isinstance(message, AIMessage) else []


def _marked(message: BaseMessage, calls: list[ToolCall]) -> bool:
    """Whether a redaction marker is where redaction puts one: the content's texts, a tool
    result's text, a tool call's argument values (`calls`, the message's). A shallow look, on
    purpose: walking every nested value cost a quarter of a Claude Code session's load time."""
    content = message.content
    if type(content) is str:
        if MARK in content:
            return True
    else:
        for block in content:  # loops, not `any` over generators: a fifth of the notes
            if _block_marked(block):
                return True
    for call in calls:
        for value in call["args"].values():
            if type(value) is str and MARK in value:
                return True
    return False


def redacted_messages(messages: Sequence[BaseMessage]) -> int:
    """How many messages hold a redaction marker (in their texts or tool-call arguments)."""
    return sum(1 for m in messages if _marked(m, _calls(m)))


def notes(messages: Sequence[BaseMessage]) -> list[str]:
    """The notes a trace gets for its redacted messages and its arguments kept as text
    (both counted in one walk of the messages)."""
    out = []
    unparsed = redacted = 0
    for message in messages:
        calls = _calls(message)
        for call in calls:
            args = call["args"]
            if ARGUMENTS_TEXT in args and len(args) == 1:
                unparsed += 1
        if _marked(message, calls):
            redacted += 1
    if redacted:
        out.append(
            f"{redacted} of {len(messages)} messages hold redaction markers "
            "([REDACTED_... len=N sha=...]): kept as text; each counts as the N characters it "
            "hides, and the recorded usage is intact."
        )
    if unparsed:
        out.append(
            f"{unparsed} tool calls have arguments that are not JSON (redacted or cut): kept "
            f"as text under args[{ARGUMENTS_TEXT!r}]."
        )
    return out


__all__ = ["ARGUMENTS_TEXT", "arguments_or_text", "notes", "redacted_messages"]
