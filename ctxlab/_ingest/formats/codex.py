"""OpenAI Codex CLI rollout files (`~/.codex/sessions/.../rollout-*.jsonl`) to canonical `Trace`s.

Each line is `{"timestamp", "type", "payload"}`: `session_meta` (session id, base instructions,
provider), `turn_context` (model, reasoning effort), `response_item` (OpenAI Responses items:
the conversation itself), `event_msg` (UI events; `token_count` carries each model call's usage)
and `compacted` (Codex's own compaction, with the summary text and, in newer versions, the
history that replaced the old one). The oldest rollouts have a bare session header line and
bare Responses items instead; they are read too.

A model call is delimited by its `token_count` event: the output items (reasoning, assistant
text, tool calls) recorded since the previous call are its output, everything recorded before
them its input. The per-call input itself is not in the file, so it is rebuilt from the items.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    UsageMetadata,
)

from ctxlab._cost.redacted import hidden_chars
from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats import redaction
from ctxlab._ingest.formats.messages import Content, MessageDecodeError
from ctxlab._ingest.formats.redaction import arguments_or_text
from ctxlab._ingest.inputs import Context, Inputs, Recorder
from ctxlab._messages import summary_message
from ctxlab._trace import RecordedCompaction, Trace, Turn

NAME = "codex"
DESCRIPTION = (
    "a Codex CLI rollout (JSONL lines {'timestamp', 'type', 'payload'} with types such as "
    "'session_meta', 'response_item', 'event_msg')"
)

Values = list[tuple[Any, int | None]]

_LINE_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_OUTPUT_ITEMS = (
    "reasoning",
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "web_search_call",
    "tool_search_call",
    "image_generation_call",
)
_TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")
_CONTEXT_PREFIXES = ("# AGENTS.md instructions", "<environment_context>", "<user_instructions>")
"""User-role messages Codex injects as context, not typed by the user (`collect_user_messages`
leaves them out of a local compaction's kept user messages)."""
ENCRYPTED_REASONING = "encrypted_reasoning_chars"
"""`AIMessage.additional_kwargs` key: the characters of each encrypted reasoning item of the
call (a redaction marker's `len=N`), whose text is dropped. Codex counts the reasoning of
earlier turns from these lengths when it decides to compact (`ctxlab._replay.policies.codex`)."""
_SUMMARY_PREFIX_START = "Another language model started to solve this problem"
_USER_MESSAGE_MAX_CHARS = 20_000 * 4
"""Codex keeps the most recent user messages up to 20,000 tokens (`approx_token_count`: 4
characters a token) when it rebuilds the history after a local compaction."""
_ENCRYPTED_SUMMARY = "[compaction summary encrypted by the OpenAI compact endpoint]"


def _is_line(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("type") in _LINE_TYPES
        and isinstance(value.get("payload"), dict)
    )


def _is_legacy_header(value: Any) -> bool:
    """The first line of a 2025 rollout: `{"id", "timestamp", "instructions"?}`, no type."""
    return (
        isinstance(value, dict)
        and "type" not in value
        and isinstance(value.get("id"), str)
        and isinstance(value.get("timestamp"), str)
    )


def sniff(values: Values) -> bool:
    """A rollout line first (or after a legacy header): `type` and a `payload` object."""
    if not values or values[0][1] is None:
        return _is_line(values[0][0]) if values else False
    first = values[0][0]
    if _is_line(first):
        return True
    if _is_legacy_header(first) and len(values) > 1:
        second = values[1][0]
        return isinstance(second, dict) and ("record_type" in second or "type" in second)
    return False


# -- validation at the boundary ---------------------------------------------------------------


@dataclass(slots=True)
class _Where:
    source: str
    line: int | None

    def fail(self, message: str) -> TraceFormatError:
        return TraceFormatError(message, source=self.source, line=self.line)

    def obj(self, value: Any, name: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(f"'{name}' must be an object, got {_kind(value)}")
        return value

    @overload
    def text(self, value: Any, name: str, *, optional: Literal[False] = False) -> str: ...

    @overload
    def text(self, value: Any, name: str, *, optional: bool) -> str | None: ...

    def text(self, value: Any, name: str, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.fail(f"'{name}' must be a string, got {_kind(value)}")
        return value

    def count(self, value: Any, name: str) -> int:
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(f"'{name}' must be a non-negative integer, got {_kind(value)}")
        return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), f"a {type(value).__name__}"
    )


def _content(value: Any, where: _Where, name: str) -> Content:
    """Responses content parts (`input_text`, `output_text`, `input_image`) as LangChain
    content: one string when the message has one text part, text/image blocks otherwise."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise where.fail(
            f"'{name}' must be a list of content parts or a string, got {_kind(value)}"
        )
    blocks: list[dict[str, Any]] = []
    for i, part in enumerate(value):
        if not isinstance(part, dict):  # the field's name is worded only for an error
            where.obj(part, f"{name}[{i}]")
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            text = part.get("text")
            if not isinstance(text, str):
                where.text(text, f"{name}[{i}].text")
            if len(value) == 1:
                return text  # one text part: the message's text (the most common content)
            blocks.append({"type": "text", "text": text})
        elif kind == "input_image":
            url = where.text(part.get("image_url"), f"{name}[{i}].image_url")
            blocks.append({"type": "image_url", "image_url": {"url": url}})
        else:
            raise where.fail(
                f"'{name}[{i}].type' must be input_text, output_text or input_image, got {kind!r}"
            )
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        return blocks[0]["text"]
    return blocks


_TEXT_PARTS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")
"""Content-part types read as text (a tuple: a part's `type` may be any JSON value, a list
too, which a set could not look up)."""


def _text_of(content: Content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] for b in content if b["type"] == "text")


def _tool_output(value: Any, where: _Where) -> Content:
    """A tool result: a string, content parts, or `{"content"|"output": ...}` (older payloads)."""
    if isinstance(value, dict):
        inner = value.get("content", value.get("output"))
        if inner is None:
            raise where.fail("'payload.output' object must hold 'content' or 'output'")
        return _tool_output(inner, where)
    return _content(value, where, "payload.output")


# -- the reader -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Call:
    """A model call whose output items are still arriving."""

    started_at: str | None
    text: list[Content] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning: list[Any] = field(default_factory=list)
    encrypted: list[int] = field(default_factory=list)
    web_searches: list[Any] = field(default_factory=list)

    def message(self, model: str | None) -> AIMessage:
        content: Content
        if not self.text:
            content = ""
        elif len(self.text) == 1:
            content = self.text[0]
        else:
            content = []
            for part in self.text:
                content.extend([{"type": "text", "text": part}] if isinstance(part, str) else part)
        extra: dict[str, Any] = {}
        if self.reasoning:
            extra["reasoning"] = {"type": "reasoning", "summary": self.reasoning}
        if self.encrypted:
            extra[ENCRYPTED_REASONING] = self.encrypted
        if self.web_searches:
            extra["web_search_calls"] = self.web_searches
        return AIMessage(
            content=content,
            tool_calls=self.tool_calls,
            additional_kwargs=extra,
            response_metadata={"model_name": model} if model else {},
        )


@dataclass(slots=True)
class _Usage:
    input: int
    cached: int
    output: int
    reasoning: int
    total: int


@dataclass
class _Rollout:
    """Reading state: the full history, the as-sent context, and what is pending."""

    history: list[BaseMessage] = field(default_factory=list)
    sent: Context = field(default_factory=Context)
    recorder: Recorder = field(default_factory=Recorder)
    turns: list[Turn] = field(default_factory=list)
    harness: list[Turn] = field(default_factory=list)
    inserted: list[BaseMessage] = field(default_factory=list)
    compactions: list[RecordedCompaction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    called: set[str] = field(default_factory=set)
    call: _Call | None = None
    model: str | None = None
    provider: str | None = None
    system: str | None = None
    last_time: str | None = None
    last_totals: tuple[int, ...] | None = None
    last_flat: tuple[int, ...] | None = None
    unmetered: list[int] = field(default_factory=list)
    """Indices of turns flushed before their `token_count` arrived."""
    idle_usage: tuple[_Usage, str | None] | None = None
    """A counted call with no output items: a summariser if a `compacted` line follows."""
    compact_next: bool = False
    awaiting_post: RecordedCompaction | None = None
    estimate: int | None = None
    """Codex's estimate of the history after compacting, when it came before the `compacted`
    line (versions that recompute usage before persisting the item)."""
    task: int = 0
    task_active: set[int] = field(default_factory=set)
    compaction_tasks: list[tuple[int, int]] = field(default_factory=list)
    encrypted: int = 0
    web_searches: int = 0

    rebuilt_lines: list[int] = field(default_factory=list)
    remote_lines: list[int] = field(default_factory=list)

    # -- items ----------------------------------------------------------------------------

    def add_input(self, message: BaseMessage) -> None:
        self.flush()
        self.settle_idle()
        self.history.append(message)
        self.sent.append(message)

    def pending(self) -> _Call:
        self.settle_idle()
        if self.call is None:
            self.call = _Call(started_at=self.last_time)
        return self.call

    def flush(self, usage: _Usage | None = None) -> None:
        """Close the pending call (if any) into a Turn, with its usage when known."""
        call = self.call
        if call is None:
            return
        self.call = None
        output = call.message(self.model)
        if usage is not None:
            output.usage_metadata = _usage_metadata(usage)
        if usage is None:
            self.unmetered.append(len(self.turns))
        self.turns.append(self.turn(output, usage, call.started_at))
        self.history.append(output)
        self.sent.append(output)
        self.called.update(i for c in output.tool_calls if (i := c.get("id")))
        self.task_active.add(self.task)

    def turn(self, output: AIMessage | None, usage: _Usage | None, started: str | None) -> Turn:
        compacted, self.compact_next = self.compact_next, False
        return Turn(
            index=len(self.turns),
            position=len(self.history),
            inputs=self.recorder.snapshot(self.sent),
            output=output,
            model=self.model,
            provider=self.provider,
            input_tokens=usage.input if usage else None,
            output_tokens=usage.output if usage else None,
            cache_read_tokens=usage.cached if usage else None,
            compacted=compacted,
            started_at=started,
        )

    def settle_idle(self) -> None:
        """A counted call that produced no items and was not a summariser: an empty turn."""
        if self.idle_usage is None:
            return
        usage, started = self.idle_usage
        self.idle_usage = None
        self.turns.append(self.turn(None, usage, started))
        self.task_active.add(self.task)

    # -- usage ----------------------------------------------------------------------------

    def count(self, usage: _Usage) -> None:
        """One model call's usage: closes the pending call, or meters one flushed early."""
        if self.call is not None:
            self.flush(usage)
        elif self.unmetered:
            index = self.unmetered.pop()
            turn = self.turns[index]
            if turn.output is not None:
                turn.output.usage_metadata = _usage_metadata(usage)
            self.turns[index] = dataclasses.replace(
                turn,
                input_tokens=usage.input,
                output_tokens=usage.output,
                cache_read_tokens=usage.cached,
            )
        else:
            self.settle_idle()
            self.idle_usage = (usage, self.last_time)

    def token_count(self, payload: dict[str, Any], where: _Where) -> None:
        info = payload.get("info", payload if "input_tokens" in payload else None)
        if info is None:
            return  # a rate-limit update: no usage
        info = where.obj(info, "payload.info")
        if "last_token_usage" in info or "total_token_usage" in info:
            last = _usage(
                where.obj(info.get("last_token_usage"), "payload.info.last_token_usage"),
                where,
                "last_token_usage",
            )
            totals = _usage(
                where.obj(info.get("total_token_usage"), "payload.info.total_token_usage"),
                where,
                "total_token_usage",
            )
            window = info.get("model_context_window")
            if window is not None:
                self.metadata["model_context_window"] = where.count(window, "model_context_window")
            key = (totals.input, totals.cached, totals.output, totals.total)
            if key == self.last_totals:
                if last.input == 0 and last.total:
                    if self.awaiting_post is not None:
                        self.set_post(last.total)
                    else:
                        self.estimate = last.total
                return  # a repeated event, or Codex's estimate of the history after compacting
            self.last_totals = key
            self.metadata["total_token_usage"] = info["total_token_usage"]
        else:
            last = _usage(info, where, "payload")
            flat = (last.input, last.cached, last.output, last.total)
            if flat == self.last_flat and self.call is None:
                return  # older versions repeat the event
            self.last_flat = flat
        self.awaiting_post = None
        self.estimate = None
        self.count(last)

    def set_post(self, tokens: int) -> None:
        assert self.awaiting_post is not None
        index = self.compactions.index(self.awaiting_post)
        self.compactions[index] = dataclasses.replace(self.awaiting_post, post_tokens=tokens)
        self.awaiting_post = None

    # -- compaction -----------------------------------------------------------------------

    def compacted(self, payload: dict[str, Any], where: _Where, stamp: str | None) -> None:
        self.flush()
        pre = _last_total(self.turns)
        if self.idle_usage is not None:  # the summariser's own call
            usage, started = self.idle_usage
            self.idle_usage = None
            self.harness.append(
                Turn(
                    index=len(self.harness),
                    position=-1,
                    inputs=Inputs.of(self.sent),
                    output=None,
                    model=self.model,
                    provider=self.provider,
                    name="compact",
                    input_tokens=usage.input,
                    output_tokens=usage.output,
                    cache_read_tokens=usage.cached,
                    started_at=started,
                )
            )
        message = where.text(payload.get("message"), "payload.message", optional=True) or ""
        replacement = payload.get("replacement_history")
        summary: BaseMessage | None = None
        if replacement is not None:
            if not isinstance(replacement, list):
                raise where.fail(
                    f"'payload.replacement_history' must be a list, got {_kind(replacement)}"
                )
            sent, summary = self.replaced(replacement, message, where)
            self.sent = Context(sent)
        else:
            self.rebuilt_lines.append(where.line or 0)
            summary = summary_message(message or "(no summary available)")
            self.sent = Context(self.rebuilt(summary))
        if summary is not None:
            self.inserted.append(summary)
        trigger = payload.get("trigger")
        record = RecordedCompaction(
            turn=len(self.turns),
            kind="summarize",
            trigger=trigger if trigger in ("auto", "manual") else "auto",
            pre_tokens=pre,
            post_tokens=self.estimate,
            summary=_text_of(summary.content) if summary is not None and message else None,
            started_at=stamp,
        )
        if trigger not in ("auto", "manual"):
            self.compaction_tasks.append((len(self.compactions), self.task))
        self.compactions.append(record)
        self.awaiting_post = record if self.estimate is None else None
        self.estimate = None
        self.compact_next = True

    def replaced(
        self, items: list[Any], message: str, where: _Where
    ) -> tuple[list[BaseMessage], BaseMessage | None]:
        """The as-sent context a `replacement_history` gives, reusing full-history messages."""
        known: dict[tuple[str, str], BaseMessage] = {}
        for msg in self.history:
            if isinstance(msg, HumanMessage | SystemMessage):
                known.setdefault((msg.type, _text_of(msg.content)), msg)
        sent: list[BaseMessage] = [self.history[0]] if self.system is not None else []
        summary: BaseMessage | None = None
        for i, raw in enumerate(items):
            item = where.obj(raw, f"payload.replacement_history[{i}]")
            if "type" not in item and isinstance(item.get("item"), dict):
                item = item["item"]  # an item with its metadata (newer versions)
            kind = item.get("type")
            if kind in ("compaction", "compaction_summary"):
                summary = summary_message(_ENCRYPTED_SUMMARY)
                self.remote_lines.append(where.line or 0)
                sent.append(summary)
                continue
            if kind != "message":
                continue  # ghost snapshots and other bookkeeping items
            role = item.get("role")
            content = _content(
                item.get("content"), where, f"payload.replacement_history[{i}].content"
            )
            text = _text_of(content)
            if role == "user" and (
                text.startswith(_SUMMARY_PREFIX_START) or (message and text == message)
            ):
                summary = summary_message(content)
                sent.append(summary)
                continue
            key = ("human" if role == "user" else "system" if role == "developer" else "ai", text)
            found = known.get(key)
            if found is None:
                found = _role_message(
                    role, content, where, f"payload.replacement_history[{i}].role"
                )
            sent.append(found)
        return sent, summary

    def rebuilt(self, summary: BaseMessage) -> list[BaseMessage]:
        """Codex's local compaction without `replacement_history`: instructions, injected
        context, the most recent user messages (20,000 tokens' worth), then the summary."""
        lead = [m for m in self.history if isinstance(m, SystemMessage)]
        context = [
            m
            for m in self.history
            if isinstance(m, HumanMessage) and _text_of(m.content).startswith(_CONTEXT_PREFIXES)
        ]
        users = [
            m
            for m in self.history
            if isinstance(m, HumanMessage) and m not in context and m not in self.inserted
        ]
        kept: list[BaseMessage] = []
        budget = _USER_MESSAGE_MAX_CHARS
        for msg in reversed(users):
            size = len(_text_of(msg.content))
            if size > budget:
                break
            kept.append(msg)
            budget -= size
        return [*lead, *context, *reversed(kept), summary]

    def new_task(self) -> None:
        self.flush()
        self.settle_idle()
        self.task += 1

    def finish(self) -> None:
        self.flush()
        self.settle_idle()
        for index, task in self.compaction_tasks:
            if task not in self.task_active:  # a task that only compacted: the user's /compact
                self.compactions[index] = dataclasses.replace(
                    self.compactions[index], trigger="manual"
                )
                self.notes.append(
                    f"The compaction of turn {self.compactions[index].turn} ran as a task of its "
                    "own, with no user message or model call: taken as a manual /compact."
                )


def _usage(value: dict[str, Any], where: _Where, name: str) -> _Usage:
    return _Usage(
        input=where.count(value.get("input_tokens"), f"{name}.input_tokens"),
        cached=where.count(value.get("cached_input_tokens"), f"{name}.cached_input_tokens"),
        output=where.count(value.get("output_tokens"), f"{name}.output_tokens"),
        reasoning=where.count(
            value.get("reasoning_output_tokens"), f"{name}.reasoning_output_tokens"
        ),
        total=where.count(value.get("total_tokens"), f"{name}.total_tokens"),
    )


def _usage_metadata(usage: _Usage) -> UsageMetadata:
    """OpenAI accounting: `input_tokens` includes the cached ones (`total = input + output`)."""
    return {
        "input_tokens": usage.input,
        "output_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "input_token_details": {"cache_read": usage.cached},
        "output_token_details": {"reasoning": usage.reasoning},
    }


def _last_total(turns: list[Turn]) -> int | None:
    """The context size Codex compares with its auto-compact limit: the last call's input
    plus output tokens."""
    for turn in reversed(turns):
        if turn.input_tokens is not None:
            return turn.input_tokens + (turn.output_tokens or 0)
    return None


def _role_message(role: Any, content: Any, where: _Where, name: str) -> BaseMessage:
    if role == "user":
        return HumanMessage(content=content)
    if role in ("developer", "system"):
        return SystemMessage(content=content)
    if role == "assistant":
        return AIMessage(content=content)
    raise where.fail(f"'{name}' must be user, developer or assistant, got {role!r}")


def _response_item(state: _Rollout, item: dict[str, Any], where: _Where) -> None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        content = _content(item.get("content"), where, "payload.content")
        if role == "assistant":
            state.pending().text.append(content)
        else:
            state.add_input(_role_message(role, content, where, "payload.role"))
    elif kind == "reasoning":
        call = state.pending()
        encrypted = item.get("encrypted_content")
        if encrypted:
            state.encrypted += 1
            if isinstance(encrypted, str):
                call.encrypted.append(len(encrypted) + hidden_chars(encrypted))
        for name in ("summary", "content"):
            parts = item.get(name)
            if parts:
                text = _text_of(_content(parts, where, f"payload.{name}"))
                if text:
                    call.reasoning.append(text)
    elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
        call_id = where.text(item.get("call_id", item.get("id")), "payload.call_id")
        if kind == "function_call":
            name = where.text(item.get("name"), "payload.name")
            try:
                args = arguments_or_text(item.get("arguments"))[0]
            except MessageDecodeError as exc:
                raise where.fail(f"'payload.arguments': {exc}") from exc
        elif kind == "custom_tool_call":
            name = where.text(item.get("name"), "payload.name")
            args = {"input": where.text(item.get("input"), "payload.input")}
        else:
            name, args = "local_shell", where.obj(item.get("action"), "payload.action")
        state.pending().tool_calls.append(
            {"name": name, "args": args, "id": call_id, "type": "tool_call"}
        )
    elif kind in ("web_search_call", "tool_search_call", "image_generation_call"):
        state.pending().web_searches.append({"type": kind, "action": item.get("action")})
        state.web_searches += 1
    elif kind in _TOOL_OUTPUTS:
        call_id = where.text(item.get("call_id"), "payload.call_id")
        assert call_id is not None
        state.flush()
        if call_id not in state.called:
            raise where.fail(
                f"tool output for call {call_id!r} has no earlier function_call or "
                "custom_tool_call with that call_id"
            )
        state.add_input(
            ToolMessage(content=_tool_output(item.get("output"), where), tool_call_id=call_id)
        )
    # other items (ghost snapshots, compaction markers, unknown future kinds) carry no text


def _event(state: _Rollout, payload: dict[str, Any], where: _Where) -> None:
    kind = payload.get("type")
    if kind == "token_count":
        state.token_count(payload, where)
    elif kind in ("task_started", "turn_started"):
        state.new_task()
        window = payload.get("model_context_window")
        if window is not None:
            state.metadata["model_context_window"] = where.count(window, "model_context_window")


def _session_meta(state: _Rollout, payload: dict[str, Any], where: _Where) -> None:
    meta: dict[str, Any] = {
        k: payload.get(k)
        for k in ("id", "cwd", "originator", "cli_version", "source")
        if k in payload
    }
    state.metadata.update(meta)
    _recorded_limits(state, payload, where)
    provider = payload.get("model_provider")
    state.provider = where.text(provider, "payload.model_provider", optional=True) or state.provider
    base = payload.get("base_instructions")
    if isinstance(base, dict):
        base = base.get("text")
    text = where.text(base, "payload.base_instructions", optional=True)
    if text and state.system is None and not state.history:
        state.system = text
        state.add_input(SystemMessage(content=text))


_RECORDED_LIMITS = ("model_context_window", "model_auto_compact_token_limit")
"""Settings Codex writes into `turn_context` (and some builds into `session_meta`) that fix
when it compacts; check-replay runs the `codex` preset with them."""


def _recorded_limits(state: _Rollout, payload: dict[str, Any], where: _Where) -> None:
    for key in _RECORDED_LIMITS:
        if payload.get(key) is not None:
            state.metadata[key] = where.count(payload[key], f"payload.{key}")


def _turn_context(state: _Rollout, payload: dict[str, Any], where: _Where) -> None:
    state.model = where.text(payload.get("model"), "payload.model", optional=True) or state.model
    effort = payload.get("effort")
    if effort is not None:
        state.metadata["effort"] = where.text(effort, "payload.effort")
    _recorded_limits(state, payload, where)
    base = payload.get("base_instructions")
    if isinstance(base, str) and base and state.system is None and not state.history:
        state.system = base
        state.add_input(SystemMessage(content=base))


def _legacy(value: Any) -> tuple[str, Any] | None:
    """A 2025 rollout line as (type, payload): the header, bare items, state records."""
    if _is_legacy_header(value):
        return "session_meta", value
    if isinstance(value, dict) and "record_type" in value:
        return None
    return "response_item", value


def read(values: Values, source: str) -> list[Trace]:
    """The one conversation of a rollout file."""
    state = _Rollout()
    legacy = not _is_line(values[0][0])
    kind: Any  # a str once checked
    for value, line in values:
        where = _Where(source, line)
        if legacy:
            split = _legacy(value)
            if split is None:
                continue
            kind, payload = split
            payload = where.obj(payload, "line")
            stamp = None
        elif not (
            isinstance(value, dict)
            and isinstance(kind := value.get("type"), str)
            and isinstance(payload := value.get("payload"), dict)
            and (isinstance(stamp := value.get("timestamp"), str) or stamp is None)
        ):  # the checks one at a time, for the error of the first that fails
            value = where.obj(value, "line")
            kind = where.text(value.get("type"), "type")
            payload = where.obj(value.get("payload"), "payload")
            stamp = where.text(value.get("timestamp"), "timestamp", optional=True)
        if kind == "response_item":
            _response_item(state, payload, where)
        elif kind == "event_msg":
            _event(state, payload, where)
        elif kind == "turn_context":
            _turn_context(state, payload, where)
        elif kind == "session_meta":
            _session_meta(state, payload, where)
        elif kind == "compacted":
            state.compacted(payload, where, stamp)
        state.last_time = stamp or state.last_time  # a call starts after the line before it
    state.finish()
    if not state.turns:
        raise TraceFormatError(
            "rollout has no model calls (expected response_item lines with assistant output)",
            source=source,
        )
    return [_trace(state, source, legacy)]


def _trace(state: _Rollout, source: str, legacy: bool) -> Trace:
    notes = [
        "Codex rollouts do not record per-call inputs: each call's input is rebuilt from the "
        "items before it (base instructions, developer and user messages, earlier outputs and "
        "tool results), and after a compaction from the history that replaced the old one.",
        "Tool schemas are not recorded (Codex sends them with every request): counted as zero.",
    ]
    if state.system is None:
        notes.append("The base instructions (system prompt) are not recorded: counted as zero.")
    if state.encrypted:
        notes.append(
            f"Encrypted reasoning items ({state.encrypted}) are dropped: their text cannot be "
            "read, and their tokens appear only in the recorded output usage. Their lengths "
            f"are kept (additional_kwargs['{ENCRYPTED_REASONING}']): Codex's compaction "
            "trigger estimates earlier turns' reasoning from them."
        )
    if state.web_searches:
        notes.append(
            f"Server-side tool calls such as web searches ({state.web_searches}) are kept in the "
            "assistant message's additional_kwargs['web_search_calls'] and count as zero tokens."
        )
    unmetered = sum(1 for t in state.turns if t.input_tokens is None)
    if unmetered:
        notes.append(f"Model calls without a token_count event ({unmetered}) have unknown usage.")
    for line in state.rebuilt_lines:
        notes.append(
            f"The compaction at line {line} has no replacement_history: the input after it is "
            "rebuilt as Codex's local compaction builds it (instructions, injected context, the "
            "most recent user messages up to 20,000 tokens, the summary)."
        )
    for line in state.remote_lines:
        notes.append(
            f"The compaction at line {line} came from OpenAI's compact endpoint: its summary is "
            "encrypted, so a placeholder stands in for it."
        )
    if legacy:
        notes.append("This early rollout format records no model names or usage.")
    notes.extend(state.notes)
    notes.extend(redaction.notes(state.history))
    trace_id = str(state.metadata.get("id") or Path(source).name.split(".")[0])
    return Trace(
        trace_id=trace_id,
        format=NAME,
        source=source,
        messages=state.history,
        turns=state.turns,
        model=next((t.model for t in state.turns if t.model), None),
        provider=state.provider,
        harness_calls=state.harness,
        inserted=state.inserted,
        metadata=state.metadata,
        compactions=state.compactions,
        notes=notes,
    )
