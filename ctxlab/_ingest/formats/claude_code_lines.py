"""The lines of a Claude Code session file, checked at the boundary.

Each JSONL line of `~/.claude/projects/<project>/<session>.jsonl` is one entry. Entries with a
`uuid` form a tree through `parentUuid` (a `compact_boundary` starts a new root and points back
through `logicalParentUuid`); `user` and `assistant` entries carry an Anthropic Messages API
`message`. Every field ctxlab reads is type-checked here, once, so the chain builder works on
known shapes and a bad file fails with the line and field at fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxlab._errors import TraceFormatError

MESSAGE_TYPES = ("user", "assistant")


@dataclass(slots=True)
class Line:
    """One entry of the tree (a line with a `uuid`), with the fields the chain builder needs.

    `blocks` is the message content as a block list (a user string becomes one text block
    only when it is turned into a message, so plain prompts stay strings: `text`).
    """

    number: int | None
    type: str
    uuid: str
    parent: str | None
    logical_parent: str | None
    sidechain: bool
    timestamp: str | None
    subtype: str | None = None
    text: str | None = None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    message_id: str | None = None
    model: str | None = None
    usage: dict[str, int] | None = None
    stop_reason: str | None = None
    is_compact_summary: bool = False
    metadata: dict[str, Any] | None = None


@dataclass(slots=True)
class Parsed:
    """A whole file: its tree entries in file order, plus what lives outside the tree."""

    lines: list[Line]
    session_id: str | None = None
    agent_id: str | None = None
    version: str | None = None
    cwd: str | None = None
    summaries: list[dict[str, str | None]] = field(default_factory=list)
    agent_calls: dict[str, str] = field(default_factory=dict)
    """Subagent id -> the id of the Task tool call that ran it (Claude Code 2.x)."""


class _Checker:
    """Type checks that raise a `TraceFormatError` naming the file, line and field."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.line: int | None = None

    def fail(self, name: str, expected: str, value: Any) -> TraceFormatError:
        got = "null" if value is None else type(value).__name__
        return TraceFormatError(
            f"field '{name}': expected {expected}, got {got}", source=self.source, line=self.line
        )

    def obj(self, value: Any, name: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(name, "an object", value)
        return value

    def str_(self, value: Any, name: str) -> str:
        if not isinstance(value, str):
            raise self.fail(name, "a string", value)
        return value

    def opt_str(self, value: Any, name: str) -> str | None:
        return None if value is None else self.str_(value, name)

    def opt_int(self, value: Any, name: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(name, "a non-negative integer", value)
        return value

    def blocks(self, value: Any, name: str) -> list[dict[str, Any]]:
        if not isinstance(value, list):
            raise self.fail(name, "a string or a list of content blocks", value)
        for i, block in enumerate(value):
            if not _plain_block(block):
                self.block(block, f"{name}[{i}]")
        return value

    def block(self, block: Any, where: str) -> None:
        """The checks of one content block, naming the field at fault."""
        self.str_(self.obj(block, where).get("type"), f"{where}.type")
        kind = block["type"]
        if kind == "tool_use":
            self.str_(block.get("id"), f"{where}.id")
            self.str_(block.get("name"), f"{where}.name")
            if not isinstance(block.get("input"), str):  # text: redacted or cut
                self.obj(block.get("input"), f"{where}.input")
        elif kind == "tool_result":
            self.str_(block.get("tool_use_id"), f"{where}.tool_use_id")
            content = block.get("content")
            if content is not None and not isinstance(content, str | list):
                raise self.fail(f"{where}.content", "a string or a list", content)


def _plain_block(block: Any) -> bool:
    """Whether `_Checker.block` passes `block`, without building the field names it would
    report: a block's four names cost more than its checks on a session of short lines."""
    if type(block) is not dict:
        return False
    kind = block.get("type")
    if type(kind) is not str:
        return False
    if kind == "tool_use":
        return (
            type(block.get("id")) is str
            and type(block.get("name")) is str
            and type(block.get("input")) in (str, dict)
        )
    if kind == "tool_result":
        return type(block.get("tool_use_id")) is str and (
            block.get("content") is None or type(block.get("content")) in (str, list)
        )
    return True


_STR_OR_NULL = (str, type(None))
"""The types of an optional string field, for the checks' fast path: a line's fields are
tested together inline and `_Checker`'s own checks, which name the field at fault, run only
when one is off (a method call per field was a fifth of the parse of a small session)."""

_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _count(value: Any, key: str, check: _Checker) -> int:
    """A usage count (missing is 0); the field name is only built for an error."""
    if type(value) is int and value >= 0:
        return value
    return check.opt_int(value, f"message.usage.{key}") or 0


def _message(line: Line, raw: dict[str, Any], check: _Checker) -> None:
    """Fill `line` from the entry's Anthropic `message`."""
    message = check.obj(raw.get("message"), "message")
    content = message.get("content")
    if line.type == "user" and isinstance(content, str):
        line.text = content
    else:
        line.blocks = check.blocks(content, "message.content")
    if line.type == "assistant":
        message_id, model = message.get("id"), message.get("model")
        stop_reason = message.get("stop_reason")
        if not (
            type(message_id) in _STR_OR_NULL
            and type(model) in _STR_OR_NULL
            and type(stop_reason) in _STR_OR_NULL
        ):  # the checks one by one, naming the first field at fault
            check.opt_str(message_id, "message.id")
            check.opt_str(model, "message.model")
            check.opt_str(stop_reason, "message.stop_reason")
        line.message_id = message_id or line.uuid
        line.model = model
        line.stop_reason = stop_reason
        usage = message.get("usage")
        if usage is not None:
            check.obj(usage, "message.usage")
            line.usage = {k: _count(usage.get(k), k, check) for k in _USAGE_FIELDS}
    elif raw.get("isCompactSummary") is True:
        line.is_compact_summary = True


_BOUNDARY_METADATA = {
    "compact_boundary": "compactMetadata",
    "microcompact_boundary": "microcompactMetadata",
}
"""The key holding a compaction boundary's metadata, by the `system` line's subtype."""


def _system(line: Line, raw: dict[str, Any], check: _Checker) -> None:
    """Fill a `system` entry's subtype and, for compaction boundaries, their metadata."""
    line.subtype = check.opt_str(raw.get("subtype"), "subtype")
    key = _BOUNDARY_METADATA.get(line.subtype or "")
    if key is None:
        return
    meta = check.obj(raw.get(key) or {}, key)
    line.metadata = {
        "trigger": check.opt_str(meta.get("trigger"), f"{key}.trigger"),
        "pre_tokens": check.opt_int(meta.get("preTokens"), f"{key}.preTokens"),
        "post_tokens": check.opt_int(meta.get("postTokens"), f"{key}.postTokens"),
        "tokens_saved": check.opt_int(meta.get("tokensSaved"), f"{key}.tokensSaved"),
    }
    ids = meta.get("compactedToolIds") or []
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise check.fail(f"{key}.compactedToolIds", "a list of tool call ids", ids)
    line.metadata["tool_ids"] = ids


def _agent_link(raw: dict[str, Any], parsed: Parsed) -> None:
    """Record which Task call ran which subagent, from a tool result or an agent progress line."""
    if raw.get("type") == "progress":
        data = raw.get("data")
        if isinstance(data, dict) and isinstance(data.get("agentId"), str):
            call = raw.get("parentToolUseID")
            if isinstance(call, str):
                parsed.agent_calls.setdefault(data["agentId"], call)
        return
    result = raw.get("toolUseResult") if raw.get("type") == "user" else None
    if not (isinstance(result, dict) and isinstance(result.get("agentId"), str)):
        return
    content = raw["message"].get("content")
    for block in content if isinstance(content, list) else []:
        if block.get("type") == "tool_result":
            parsed.agent_calls[result["agentId"]] = block["tool_use_id"]


def parse(values: list[tuple[Any, int | None]], source: str) -> Parsed:
    """Every tree entry of a file, checked; summaries and subagent links set aside."""
    check = _Checker(source)
    parsed = Parsed(lines=[])
    for raw, number in values:
        check.line = number
        if not isinstance(raw, dict):
            raise TraceFormatError(
                f"expected one JSON object per line (a Claude Code entry), got "
                f"{type(raw).__name__}",
                source=source,
                line=number,
            )
        kind: Any = raw.get("type")  # a string once the checks below pass
        if kind == "summary":
            parsed.summaries.append(
                {
                    "summary": check.str_(raw.get("summary"), "summary"),
                    "leaf_uuid": check.opt_str(raw.get("leafUuid"), "leafUuid"),
                }
            )
            continue
        if "uuid" not in raw:
            continue  # file-history-snapshot, queue operations, titles: not conversation
        uuid, parent = raw["uuid"], raw.get("parentUuid")
        logical_parent, timestamp = raw.get("logicalParentUuid"), raw.get("timestamp")
        if not (
            type(kind) is str
            and type(uuid) is str
            and type(parent) in _STR_OR_NULL
            and type(logical_parent) in _STR_OR_NULL
            and type(timestamp) in _STR_OR_NULL
        ):  # the checks one by one, naming the first field at fault
            check.str_(kind, "type")
            check.str_(uuid, "uuid")
            check.opt_str(parent, "parentUuid")
            check.opt_str(logical_parent, "logicalParentUuid")
            check.opt_str(timestamp, "timestamp")
        line = Line(
            number=number,
            type=kind,
            uuid=uuid,
            parent=parent,
            logical_parent=logical_parent,
            sidechain=raw.get("isSidechain") is True,
            timestamp=timestamp,
        )
        if kind in MESSAGE_TYPES:
            _message(line, raw, check)
            if parsed.session_id is None:
                parsed.session_id = check.opt_str(raw.get("sessionId"), "sessionId")
                parsed.agent_id = check.opt_str(raw.get("agentId"), "agentId")
                parsed.version = check.opt_str(raw.get("version"), "version")
                parsed.cwd = check.opt_str(raw.get("cwd"), "cwd")
        elif kind == "system":
            _system(line, raw, check)
        if kind == "progress" or "toolUseResult" in raw:
            _agent_link(raw, parsed)
        parsed.lines.append(line)
    return parsed
