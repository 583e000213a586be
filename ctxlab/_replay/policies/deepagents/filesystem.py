"""Deep Agents' `FilesystemMiddleware` rules (deepagents 0.7.32) on messages: when a tool result
or a human message is offloaded, under which path, what replaces it, and which parallel file
mutations are refused. Owned here (see docs/deepagents.md §3); `tests/test_deepagents_texts.py`
compares each function with the installed package.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from hashlib import sha256
from pathlib import PurePosixPath
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage

from ctxlab._messages import message_text
from ctxlab._replay.policies.deepagents.texts import (
    PARALLEL_MUTATION_ERROR,
    render_too_large_human_msg,
    render_too_large_tool_msg,
)

NUM_CHARS_PER_TOKEN = 4
"""The offload limits are token counts times this (`tool_token_limit_before_evict=20000` is
80,000 characters), whatever the model's own chars-per-token."""

TOOLS_EXCLUDED_FROM_EVICTION = (
    "ls",
    "glob",
    "grep",
    "read_file",
    "edit_file",
    "write_file",
    "delete",
)
"""Tools whose results are never offloaded (they bound their own output, or return little)."""

FILE_MUTATION_TOOLS = frozenset({"write_file", "edit_file", "delete"})
"""Calls that change a file: two of them on one path in one AIMessage refuse the later ones."""

MAX_TOOL_CALL_PATH_COMPONENT_BYTES = 128
"""A tool call id longer than this (UTF-8) is named by its sha256 in an offload path."""


def sanitize_tool_call_id(tool_call_id: str) -> str:
    """`backends.utils.sanitize_tool_call_id`: the tool call id as one path component."""
    name = tool_call_id.replace(".", "_").replace("/", "_").replace("\\", "_")
    if len(name.encode("utf-8")) > MAX_TOOL_CALL_PATH_COMPONENT_BYTES:
        return f"call-{sha256(tool_call_id.encode('utf-8')).hexdigest()}"
    return name


def validate_path(path: str) -> str:
    """`backends.utils.validate_path` without prefixes: the normalised absolute virtual path;
    ValueError on traversal (`..`, a leading `~`) or a Windows drive."""
    if ".." in PurePosixPath(path.replace("\\", "/")).parts or path.startswith("~"):
        raise ValueError(f"Path traversal not allowed: {path}")
    if re.match(r"^[a-zA-Z]:", path):
        raise ValueError(f"Windows absolute paths are not supported: {path}")
    normalized = os.path.normpath(path).replace("\\", "/")
    if not normalized.startswith("/"):
        normalized = f"/{normalized}"
    if ".." in normalized.split("/"):
        raise ValueError(f"Path traversal detected after normalization: {path} -> {normalized}")
    return normalized


def text_len(message: BaseMessage) -> int:
    """`len(message_text(message))`, without joining when the content is a plain string."""
    content = message.content
    return len(content) if isinstance(content, str) else len(message_text(message))


def evicted_content(message: BaseMessage, replacement: str) -> str | list[Any]:
    """`_build_evicted_content`: the replacement text, followed by the message's non-text
    blocks (images, ...) when it has any."""
    if isinstance(message.content, str):
        return replacement
    media = [b for b in message.content_blocks if b["type"] != "text"]
    if not media:
        return replacement
    return [{"type": "text", "text": replacement}, *media]


def tool_stub(message: ToolMessage, path: str, text: str) -> ToolMessage:
    """The state's copy of a tool result offloaded to `path` (`_build_evicted_tool_message`):
    the stub text, the identity fields kept."""
    stub = render_too_large_tool_msg(message.tool_call_id, path, text)
    return ToolMessage(
        content=evicted_content(message, stub),
        tool_call_id=message.tool_call_id,
        name=message.name,
        id=message.id,
        artifact=message.artifact,
        status=message.status,
        additional_kwargs=dict(message.additional_kwargs),
        response_metadata=dict(message.response_metadata),
    )


def truncated_human_message(message: HumanMessage, path: str) -> HumanMessage:
    """`_build_truncated_human_message`: what the model is sent for a HumanMessage saved to
    `path` (the state keeps the full message, tagged)."""
    text = render_too_large_human_msg(path, message_text(message))
    return message.model_copy(update={"content": evicted_content(message, text)})


def rejected_result(call: dict[str, Any]) -> ToolMessage:
    """The error result a refused parallel file mutation gets instead of running."""
    return ToolMessage(
        content=PARALLEL_MUTATION_ERROR, name=call["name"], tool_call_id=call["id"], status="error"
    )


def parallel_mutation(ai: AIMessage, call: ToolCall) -> bool:
    """`_parallel_file_mutation_error`: an earlier call in the same AIMessage hit this path
    (only asked of messages with two or more file mutations)."""
    if call["name"] not in FILE_MUTATION_TOOLS:
        return False
    path = call.get("args", {}).get("file_path")
    target = _validated(path) if isinstance(path, str) else None
    if target is None:
        return False
    for other in ai.tool_calls:
        if other["id"] == call["id"]:
            return False
        other_path = other.get("args", {}).get("file_path")
        if other["name"] in FILE_MUTATION_TOOLS and isinstance(other_path, str):
            if _validated(other_path) == target:
                return True
    return False


@lru_cache(maxsize=4096)
def _validated(path: str) -> str | None:
    """`validate_path(path)`, None where it raises ValueError (cached: it goes through pathlib,
    and agents write the same paths again and again)."""
    try:
        return validate_path(path)
    except ValueError:
        return None
