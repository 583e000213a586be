"""One Claude Code conversation (the main agent, or one subagent) rebuilt from its lines.

Claude Code writes an event log, not the requests it sent, so the conversation is rebuilt the
way Claude Code itself resumes a session:

* the chain is followed from the last user/assistant line back through `parentUuid` (across a
  `compact_boundary` through its `logicalParentUuid`); lines off that chain are other branches
  (edits, rewinds) and are dropped, except the pieces Claude Code hangs beside the chain when
  the model calls tools in parallel: further lines of a chain message, and their tool results;
* the lines of one API message (one per content block, streamed) are merged by `message.id`
  into one `AIMessage`, placed where its first line is; the last line's `usage` is the final
  one (the first is a stream-start snapshot);
* each merged message from the model is one recorded call; its input is the context so far,
  which a compaction resets to the summary Claude Code inserted and a microcompact edits by
  clearing the tool results it names.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats import checked_messages
from ctxlab._ingest.formats.claude_code_lines import MESSAGE_TYPES, Line
from ctxlab._ingest.formats.messages import Content
from ctxlab._ingest.formats.redaction import arguments_or_text
from ctxlab._ingest.inputs import Context, Recorder
from ctxlab._trace import RecordedCompaction, Turn

SYNTHETIC_MODEL = "<synthetic>"
"""The model Claude Code writes on assistant messages it made up locally (interruptions, API
errors): they are part of the conversation but not model calls."""

CLEARED = "[tool result cleared by a recorded microcompact]"
"""What ctxlab puts in the later inputs in place of a tool result a microcompact cleared; the
file does not record Claude Code's own placeholder text."""


@dataclass(slots=True)
class Conversation:
    """The rebuilt conversation of one agent, ready to become a `Trace`."""

    messages: list[BaseMessage]
    turns: list[Turn]
    inserted: list[BaseMessage] = field(default_factory=list)
    compactions: list[RecordedCompaction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    prompt: str | None = None
    """Text of the first user message (a subagent's task), to find the call that spawned it."""
    before_compaction: dict[str, tuple[BaseMessage, ...]] = field(default_factory=dict)
    """The as-sent context just before each compaction, by the uuid of the line it followed:
    the input of the harness's summariser call, which continues the chain from there."""


def _error(message: str, source: str, line: Line) -> TraceFormatError:
    return TraceFormatError(message, source=source, line=line.number)


def _chain(leaf: Line, by_uuid: dict[str, Line], source: str, open_root: bool) -> list[Line]:
    """The lines from the root to `leaf`; a compaction boundary continues at its logical parent.

    `open_root`: the file continues another file's chain (a subagent transcript whose first
    line points into the session), so a parent outside the file ends the chain."""
    chain: list[Line] = []
    seen: set[str] = set()
    current: Line | None = leaf
    while current is not None:
        if current.uuid in seen:
            raise _error("parentUuid cycle: the chain comes back to this line", source, current)
        seen.add(current.uuid)
        chain.append(current)
        parent = current.parent
        if parent is None and current.logical_parent in by_uuid:
            parent = current.logical_parent
        if parent is None:
            break
        if parent not in by_uuid:
            if open_root:
                break
            raise _error(
                f"field 'parentUuid': {parent!r} is the uuid of no line in the file",
                source,
                current,
            )
        current = by_uuid[parent]
    chain.reverse()
    return chain


def _included(messages: list[Line], chain: list[Line]) -> tuple[set[str], dict[str, list[Line]]]:
    """Uuids of the message lines that make the conversation, and each message's lines."""
    on_chain = {line.uuid for line in chain}
    ids = {line.message_id for line in chain if line.type == "assistant"}
    fragments: dict[str, list[Line]] = {}
    for line in messages:
        if line.type == "assistant" and line.message_id in ids:
            fragments.setdefault(line.message_id, []).append(line)  # type: ignore[arg-type]
    calls = {
        b["id"]
        for lines in fragments.values()
        for line in lines
        for b in line.blocks
        if b["type"] == "tool_use"
    }
    included = set(on_chain)
    for line in messages:
        if line.uuid in included:
            continue
        if line.type == "assistant" and line.message_id in ids:
            included.add(line.uuid)
        elif (
            line.type == "user"
            and line.parent in included
            and line.blocks
            and all(b["type"] == "tool_result" and b["tool_use_id"] in calls for b in line.blocks)
        ):
            included.add(line.uuid)  # a result of a parallel tool call, beside the chain
    return included, fragments


def _dropped_branches(messages: list[Line], by_uuid: dict[str, Line], included: set[str]) -> int:
    """How many conversation leaves (no user/assistant line below them) were left out."""
    inner: set[str] = set()
    for line in messages:
        parent = line.parent
        while parent is not None and parent not in inner and parent in by_uuid:
            inner.add(parent)
            parent = by_uuid[parent].parent
    return sum(1 for line in messages if line.uuid not in inner and line.uuid not in included)


def _input_as_args(block: dict[str, Any]) -> dict[str, Any]:
    """A `tool_use` block whose `input` is text (redacted, or cut mid-JSON) with the text kept
    as its arguments (`redaction.arguments_or_text`); any other block as it is."""
    if block["type"] != "tool_use" or not isinstance(block.get("input"), str):
        return block
    return {**block, "input": arguments_or_text(block["input"])[0]}


def _ai_message(lines: list[Line]) -> tuple[AIMessage, Line]:
    """One API message from its streamed lines, and the line whose usage is final."""
    blocks: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    seen_calls: set[str] = set()
    for line in lines:
        for block in line.blocks:
            if block["type"] == "tool_use":
                if block["id"] in seen_calls:
                    continue
                seen_calls.add(block["id"])
                block = _input_as_args(block)
                calls.append(
                    {
                        "name": block["name"],
                        "args": block["input"],
                        "id": block["id"],
                        "type": "tool_call",
                    }
                )
            blocks.append(block)
    if len(lines) == 1:  # most messages: one line, no streamed fragments to search
        last, stop = lines[0], lines[0].stop_reason or None
    else:
        last = next((line for line in reversed(lines) if line.usage is not None), lines[-1])
        stop = next((line.stop_reason for line in reversed(lines) if line.stop_reason), None)
    metadata: dict[str, Any] = {"model_provider": "anthropic"}
    if lines[0].model:
        metadata["model_name"] = lines[0].model
    if stop:
        metadata["stop_reason"] = stop
    usage = None
    if last.usage is not None:
        read = last.usage["cache_read_input_tokens"]
        write = last.usage["cache_creation_input_tokens"]
        total = last.usage["input_tokens"] + read + write
        usage = {
            "input_tokens": total,
            "output_tokens": last.usage["output_tokens"],
            "total_tokens": total + last.usage["output_tokens"],
            "input_token_details": {"cache_read": read, "cache_creation": write},
        }
    # every field was checked by `claude_code_lines`: built without validating it again
    message = checked_messages.ai(blocks, lines[0].message_id, calls, metadata, usage)
    return message, last


def _user_messages(line: Line, names: dict[str, str]) -> list[BaseMessage]:
    """A user line: its tool results as ToolMessages, anything else as one HumanMessage."""
    if line.text is not None:
        return [checked_messages.human(line.text)]
    out: list[BaseMessage] = []
    rest: list[Any] = []  # content blocks
    for block in line.blocks:
        if block["type"] != "tool_result":
            rest.append(block)
            continue
        call = block["tool_use_id"]
        out.append(
            checked_messages.tool(
                block.get("content") or "",
                call,
                "error" if block.get("is_error") else "success",
                names.get(call),
            )
        )
    if rest:
        out.append(checked_messages.human(rest))
    return out


class _Builder:
    """Walks the included lines in file order, growing the history and the as-sent context."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.history: list[BaseMessage] = []
        self.context = Context()
        self.recorder = Recorder()
        self.turns: list[Turn] = []
        self.inserted: list[BaseMessage] = []
        self.compactions: list[RecordedCompaction] = []
        self.before: dict[str, tuple[BaseMessage, ...]] = {}
        self.names: dict[str, str] = {}
        self.compacted = False
        self.awaiting_summary = False
        self.synthetic = 0

    def add(self, message: BaseMessage) -> None:
        self.history.append(message)
        self.context.append(message)

    def boundary(self, line: Line) -> None:
        meta = line.metadata or {}
        pre, post = meta.get("pre_tokens"), meta.get("post_tokens")
        if line.subtype == "microcompact_boundary":
            saved = meta.get("tokens_saved")
            if post is None and pre is not None and saved is not None:
                post = max(pre - saved, 0)
            cleared = set(meta.get("tool_ids") or ())
            self.context = Context(
                m.model_copy(update={"content": CLEARED})
                if isinstance(m, ToolMessage) and m.tool_call_id in cleared
                else m
                for m in self.context
            )
            kind = "microcompact"
        else:
            self.before[line.logical_parent or line.uuid] = tuple(self.context)
            self.context = Context()
            self.awaiting_summary = True
            kind = "summarize"
        self.compacted = True
        self.compactions.append(
            RecordedCompaction(
                turn=len(self.turns),
                kind=kind,
                trigger=meta.get("trigger"),
                pre_tokens=pre,
                post_tokens=post,
                started_at=line.timestamp,
            )
        )

    def summary(self, line: Line) -> None:
        """The summary message after a boundary (or, in files without one, on its own)."""
        if not self.awaiting_summary:
            self.before[line.parent or line.uuid] = tuple(self.context)
            self.context = Context()
            self.compacted = True
            self.compactions.append(
                RecordedCompaction(turn=len(self.turns), started_at=line.timestamp)
            )
        content: Content = line.text if line.text is not None else line.blocks
        message = checked_messages.human(content)
        self.compactions[-1] = replace(self.compactions[-1], summary=message.text)
        self.awaiting_summary = False
        self.inserted.append(message)
        self.context.append(message)

    def call(self, lines: list[Line]) -> None:
        message, last = _ai_message(lines)
        for call in message.tool_calls:
            self.names[call["id"]] = call["name"]  # type: ignore[index]
        if lines[0].model == SYNTHETIC_MODEL:
            self.synthetic += 1
            self.add(message)
            return
        usage = last.usage or {}  # a recorded usage has every field (`claude_code_lines`)
        read = usage.get("cache_read_input_tokens")
        write = usage.get("cache_creation_input_tokens")
        full = usage["input_tokens"] + (read or 0) + (write or 0) if usage else None
        self.turns.append(
            Turn(
                index=len(self.turns),
                position=len(self.history),
                inputs=self.recorder.snapshot(self.context),
                output=message,
                model=lines[0].model,
                provider="anthropic",
                run_id=lines[0].message_id,
                input_tokens=full,
                output_tokens=usage.get("output_tokens"),
                cache_read_tokens=read,
                cache_write_tokens=write,
                compacted=self.compacted,
                started_at=lines[0].timestamp,
            )
        )
        self.compacted = False
        self.awaiting_summary = False
        self.add(message)

    def user(self, line: Line) -> None:
        for message in _user_messages(line, self.names):
            if isinstance(message, ToolMessage) and message.tool_call_id not in self.names:
                raise _error(
                    f"tool_result for call {message.tool_call_id!r} answers no tool_use of an "
                    "earlier assistant message in the conversation",
                    self.source,
                    line,
                )
            self.add(message)


def check_parents(lines: list[Line], by_uuid: dict[str, Line], source: str) -> None:
    """Every `parentUuid` of a session file names a line of the file."""
    for line in lines:
        if line.parent is not None and line.parent not in by_uuid:
            raise _error(
                f"field 'parentUuid': {line.parent!r} is the uuid of no line in the file",
                source,
                line,
            )


def build(
    lines: list[Line], by_uuid: dict[str, Line], source: str, *, open_root: bool = False
) -> Conversation:
    """The conversation of one agent from its lines (file order); `by_uuid` holds the entries
    its chain may pass through, progress lines included. `open_root`: a parent missing from
    `by_uuid` ends the chain (a subagent transcript continuing another chain) instead of
    being an error."""
    messages = [line for line in lines if line.type in MESSAGE_TYPES]
    if not messages:
        raise TraceFormatError(
            "no user or assistant lines: expected a Claude Code session transcript",
            source=source,
        )
    chain = _chain(messages[-1], by_uuid, source, open_root)
    included, fragments = _included(messages, chain)
    on_chain = {line.uuid for line in chain}
    builder = _Builder(source)
    done: set[str] = set()
    for line in lines:
        if line.type == "system":
            if line.uuid in on_chain and line.metadata is not None:
                builder.boundary(line)
        elif line.uuid not in included:
            continue
        elif line.type == "assistant":
            # a line sharing a chain line's uuid but not its message is not on the chain
            if line.message_id in fragments and line.message_id not in done:
                done.add(line.message_id)
                builder.call(fragments[line.message_id])
        elif line.is_compact_summary:
            builder.summary(line)
        else:
            builder.user(line)
    notes = []
    dropped = _dropped_branches(messages, by_uuid, included)
    if dropped:
        notes.append(
            f"{dropped} other branch(es) of the conversation (edits or rewinds) were dropped: "
            f"the chain of the last message (line {messages[-1].number}) is the one loaded."
        )
    if builder.synthetic:
        notes.append(
            f"{builder.synthetic} assistant message(s) Claude Code generated locally (model "
            f"'{SYNTHETIC_MODEL}') are in the history but are not model calls."
        )
    if any(c.kind == "microcompact" for c in builder.compactions):
        notes.append(
            "Tool results a microcompact cleared are replaced in later inputs by ctxlab's own "
            "placeholder text; the file does not record Claude Code's."
        )
    root = next((line for line in chain if line.type == "user"), None)
    return Conversation(
        messages=builder.history,
        turns=builder.turns,
        inserted=builder.inserted,
        compactions=builder.compactions,
        notes=notes,
        prompt=root.text if root is not None else None,
        before_compaction=builder.before,
    )
