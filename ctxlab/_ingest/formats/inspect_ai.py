"""Inspect AI eval logs (`.json` EvalLog documents and `.eval` zips) to canonical `Trace`s.

One trace per sample and epoch. Inspect records every model call as a `model` event carrying
the exact input (`input`, or `input_refs` into `events_data.messages` in pooled logs), the tool
schemas, the output and its usage, so the conversation is rebuilt from those calls:

1. large strings are stored once in `sample.attachments` and referenced as
   `attachment://<hash>`; references are resolved in message content, content parts, tool-call
   arguments and tool schemas;
2. model events inside a scorer (a `scorer` span or step) are harness calls; the others are
   grouped by model role, and the role holding the longest input is the agent, the rest harness
   calls (graders, critics); calls made inside a tool's span belong to a subagent of that call;
3. the agent's calls are chained: a call whose input extends the previous input + output adds the
   new tail to the full history; one that does not is a recorded compaction point. Inspect's own
   `compaction` events (`CompactionEdit`, `CompactionTrim`, `CompactionSummary`) become
   `RecordedCompaction`s; the summary message goes to `Trace.inserted` and the summariser's own
   model call to `harness_calls`.

Samples with no model events (logs written without events) fall back to `sample.messages`,
each assistant message taken as a call that saw everything before it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats.fields import obj_or_empty
from ctxlab._ingest.formats.langsmith import fingerprint, looks_like_summary
from ctxlab._ingest.formats.messages import MessageDecodeError, parse_arguments
from ctxlab._ingest.inputs import Inputs, Recorder
from ctxlab._messages import first_orphan_result, summary_message
from ctxlab._trace import RecordedCompaction, Trace, Turn, from_messages

NAME = "inspect-ai"
DESCRIPTION = (
    "an Inspect AI eval log (a JSON object with 'version', 'eval': {'task', ...} and "
    "'samples', or a .eval zip)"
)

ATTACHMENT = "attachment://"
SUMMARY_PREFIX = "[CONTEXT COMPACTION SUMMARY]"
"""How `CompactionSummary` opens the user message it puts in place of the conversation."""

COMPACTION_KINDS = {"summary": "summarize", "edit": "clear_tool_uses", "trim": "trim"}
"""Inspect compaction types as ctxlab event kinds (what the matching `inspect-*` presets emit)."""
_STRATEGY_TYPES = {
    "CompactionSummary": "summary",
    "CompactionEdit": "edit",
    "CompactionTrim": "trim",
}


def sniff(values: list[tuple[Any, int | None]]) -> bool:
    """An EvalLog document: `version`, an `eval` spec naming its task, and samples or a status."""
    if len(values) != 1:
        return False
    doc = values[0][0]
    return (
        isinstance(doc, dict)
        and "version" in doc
        and isinstance(doc.get("eval"), dict)
        and "task" in doc["eval"]
        and ("samples" in doc or "status" in doc)
    )


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


@dataclass
class _Sample:
    """One sample being read: where errors point, and the tables its events refer to."""

    source: str
    sample_id: Any
    epoch: Any
    attachments: dict[str, Any]
    pool: list[Any] = field(default_factory=list)
    memo: dict[tuple[Any, ...], tuple[dict[str, Any], BaseMessage]] = field(default_factory=dict)

    def error(self, where: str, what: str) -> TraceFormatError:
        return TraceFormatError(
            f"sample {self.sample_id!r} (epoch {self.epoch}), {where}: {what}", source=self.source
        )

    def expect(self, value: Any, kind: type | tuple[type, ...], where: str, expected: str) -> Any:
        """`value` if it has the expected JSON type (booleans are not numbers), else an error."""
        if isinstance(value, kind) and not (isinstance(value, bool) and bool not in _tuple(kind)):
            return value
        raise self.error(where, f"expected {expected}, got {_type_name(value)}")

    def integer(self, value: Any, where: str) -> int | None:
        if value is None:
            return None
        return self.expect(value, int, where, "an integer token count")

    def text(self, value: Any, where: str) -> Any:
        """A string with its `attachment://` reference resolved."""
        if isinstance(value, str) and value.startswith(ATTACHMENT):
            key = value[len(ATTACHMENT) :]
            if key not in self.attachments:
                raise self.error(
                    where, f"unresolved reference {value!r} (expected a key of sample.attachments)"
                )
            return self.expect(self.attachments[key], str, f"attachments[{key!r}]", "a string")
        return value

    def deep(self, value: Any, where: str) -> Any:
        """`value` with every `attachment://` string inside resolved; unchanged containers are
        returned as the same objects, so the common case allocates nothing."""
        if isinstance(value, str):
            return self.text(value, where)
        if isinstance(value, dict):
            items: Any = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            return value
        out: Any = None
        for key, item in items:
            if isinstance(item, str | dict | list):
                new = self.deep(item, where)
                if new is not item:
                    if out is None:
                        out = value.copy()
                    out[key] = new
        return value if out is None else out


def _tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


# ----------------------------------------------------------------------------- messages


def _part(s: _Sample, part: Any, where: str) -> Any:
    """One Inspect content part as a LangChain content block."""
    s.expect(part, dict, where, "a content part object")
    kind = part.get("type")
    if kind == "text":
        text = s.text(s.expect(part.get("text"), str, f"{where}.text", "a string"), where)
        return {"type": "text", "text": text}
    if kind == "reasoning":
        text = s.text(part.get("reasoning") or "", f"{where}.reasoning")
        return {"type": "reasoning", "reasoning": s.expect(text, str, where, "reasoning text")}
    if kind == "image":
        url = s.text(s.expect(part.get("image"), str, f"{where}.image", "a URL"), where)
        detail = part.get("detail", "auto")
        return {"type": "image_url", "image_url": {"url": url, "detail": detail}}
    s.expect(kind, str, f"{where}.type", "a content part type")
    return s.deep(part, where)


def _content(s: _Sample, value: Any, where: str) -> str | list[Any]:
    if value is None:
        return ""
    if isinstance(value, str):
        return s.text(value, where)
    s.expect(value, list, where, "a string or a list of content parts")
    return [_part(s, p, f"{where}[{i}]") for i, p in enumerate(value)]


def _tool_call(s: _Sample, raw: Any, where: str) -> dict[str, Any]:
    s.expect(raw, dict, where, "a tool call object")
    name = s.expect(raw.get("function"), str, f"{where}.function", "the tool's name")
    call_id = s.expect(raw.get("id"), str, f"{where}.id", "the tool call id")
    args = s.deep(raw.get("arguments"), f"{where}.arguments")
    if not isinstance(args, dict):
        try:
            args = parse_arguments(args)
        except MessageDecodeError as exc:
            raise s.error(f"{where}.arguments", str(exc)) from exc
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _decode(s: _Sample, raw: Any, where: str) -> BaseMessage:
    """One Inspect ChatMessage as a LangChain message."""
    s.expect(raw, dict, where, "a chat message object")
    role = raw.get("role")
    content = _content(s, raw.get("content"), f"{where}.content")
    msg_id = raw.get("id")
    ids = {"id": msg_id} if isinstance(msg_id, str) else {}
    if role == "system":
        return SystemMessage(content=content, **ids)
    if role == "user":
        metadata = raw.get("metadata")
        marked = isinstance(metadata, dict) and metadata.get("summary") is True
        text = content if isinstance(content, str) else ""
        if marked or text.startswith(SUMMARY_PREFIX):
            out = summary_message(content)
            return out.model_copy(update=ids) if ids else out
        return HumanMessage(content=content, **ids)
    if role == "assistant":
        calls = raw.get("tool_calls") or []
        s.expect(calls, list, f"{where}.tool_calls", "a list of tool calls")
        tool_calls = [_tool_call(s, c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls)]
        meta = {"model_name": raw["model"]} if isinstance(raw.get("model"), str) else {}
        return AIMessage(content=content, tool_calls=tool_calls, response_metadata=meta, **ids)
    if role == "tool":
        call_id = s.expect(raw.get("tool_call_id"), str, f"{where}.tool_call_id", "a call id")
        error = raw.get("error")
        status = "success"
        if error is not None:
            s.expect(error, dict, f"{where}.error", "an error object {type, message}")
            status = "error"
            if not content:
                content = s.text(str(error.get("message") or ""), f"{where}.error")
        name = raw.get("function")
        extra = {"name": name} if isinstance(name, str) else {}
        return ToolMessage(content=content, tool_call_id=call_id, status=status, **extra, **ids)
    raise s.error(
        f"{where}.role", f"expected 'system', 'user', 'assistant' or 'tool', got {role!r}"
    )


def _message(s: _Sample, raw: Any, where: str) -> BaseMessage:
    """`_decode` with a memo: every model call repeats the history, so each distinct message is
    decoded once (a hit is used only when the raw message is equal)."""
    if isinstance(raw, dict):
        content = raw.get("content")
        key = tuple(
            value if isinstance(value, str) else None
            for value in (raw.get("id"), raw.get("role"), content)
        )
        hit = s.memo.get(key)
        if hit is not None and hit[0] == raw:
            return hit[1]
        msg = _decode(s, raw, where)
        s.memo[key] = (raw, msg)
        return msg
    return _decode(s, raw, where)


# ----------------------------------------------------------------------------- model calls


@dataclass(slots=True)
class _Call:
    """One model event, decoded."""

    event_index: int
    event: dict[str, Any]
    inputs: list[BaseMessage]
    output: AIMessage | None
    role: str | None
    scope: str | None


def _inputs(s: _Sample, event: dict[str, Any], where: str) -> list[BaseMessage]:
    raw = event.get("input")
    refs = event.get("input_refs")
    if not raw and refs is not None:  # pooled log: ranges into events_data.messages
        s.expect(refs, list, f"{where}.input_refs", "a list of [start, end] ranges")
        raw = []
        for i, pair in enumerate(refs):
            ok = isinstance(pair, list) and len(pair) == 2 and all(type(x) is int for x in pair)
            if not ok or not 0 <= pair[0] <= pair[1] <= len(s.pool):
                raise s.error(
                    f"{where}.input_refs[{i}]",
                    f"expected a [start, end] range within the {len(s.pool)} pooled messages "
                    f"(sample.events_data.messages), got {pair!r}",
                )
            raw.extend(s.pool[pair[0] : pair[1]])
    s.expect(raw, list, f"{where}.input", "a list of chat messages")
    assert isinstance(raw, list)  # `expect` raised otherwise
    return [_message(s, m, f"{where}.input[{i}]") for i, m in enumerate(raw)]


def _output(s: _Sample, event: dict[str, Any], where: str) -> AIMessage | None:
    out = s.expect(event.get("output"), dict, f"{where}.output", "a model output object")
    choices = out.get("choices") or []
    s.expect(choices, list, f"{where}.output.choices", "a list of choices")
    if not choices:
        return None
    first = s.expect(choices[0], dict, f"{where}.output.choices[0]", "a choice object")
    msg = _message(s, first.get("message"), f"{where}.output.choices[0].message")
    if not isinstance(msg, AIMessage):
        raise s.error(f"{where}.output.choices[0].message.role", "expected 'assistant'")
    return msg


def _usage(s: _Sample, call: _Call) -> tuple[int | None, ...]:
    """(full prompt tokens, output, cache read, cache write) of one call.

    Newer logs record the full prompt as `output.input_context_tokens`. Otherwise: Inspect keeps
    the provider's split, OpenAI-style providers counting cached tokens inside `input_tokens`
    and Anthropic's not, so the cache is taken as separate when `total_tokens` adds it on top,
    when it exceeds `input_tokens`, or when the model is Claude."""
    where = f"event {call.event_index} (model).output"
    usage = call.event["output"].get("usage")
    if usage is None:
        return None, None, None, None
    s.expect(usage, dict, f"{where}.usage", "a usage object")
    inp = s.integer(usage.get("input_tokens"), f"{where}.usage.input_tokens")
    out = s.integer(usage.get("output_tokens"), f"{where}.usage.output_tokens")
    read = s.integer(usage.get("input_tokens_cache_read"), f"{where}.usage.input_tokens_cache_read")
    write = s.integer(
        usage.get("input_tokens_cache_write"), f"{where}.usage.input_tokens_cache_write"
    )
    total = s.integer(usage.get("total_tokens"), f"{where}.usage.total_tokens")
    context = s.integer(
        call.event["output"].get("input_context_tokens"), f"{where}.input_context_tokens"
    )
    cached = (read or 0) + (write or 0)
    model = str(call.event.get("model")).lower()
    if context is not None:
        inp = context
    elif inp is not None and cached:
        separate = (
            (total is not None and total == inp + (out or 0) + cached)
            or inp < cached
            or "claude" in model
            or model.startswith("anthropic/")
        )
        if separate:
            inp += cached
    return inp, out, read, write


def _model(call: _Call) -> tuple[str | None, str | None]:
    """(model, provider): the model the provider reports, the provider from Inspect's name."""
    name = call.event.get("model")
    provider, _, short = name.partition("/") if isinstance(name, str) else (None, "", "")
    reported = call.event["output"].get("model")
    model = reported if isinstance(reported, str) and reported else (short or name)
    return model, provider or None


def _turn(
    s: _Sample,
    call: _Call,
    index: int,
    position: int,
    compacted: bool,
    recorder: Recorder | None = None,
) -> Turn:
    """A recorded call as a `Turn`; its inputs share storage with the previous call's when a
    `recorder` is given (the agent's calls), else are a list of their own (harness calls)."""
    model, provider = _model(call)
    inp, out, read, write = _usage(s, call)
    config = call.event.get("config")
    max_tokens = config.get("max_tokens") if isinstance(config, dict) else None
    started = call.event.get("timestamp")
    return Turn(
        index=index,
        position=position,
        inputs=Inputs.of(call.inputs) if recorder is None else recorder.snapshot(call.inputs),
        output=call.output,
        model=model,
        provider=provider,
        run_id=call.event.get("uuid") if isinstance(call.event.get("uuid"), str) else None,
        name=call.role,
        input_tokens=inp,
        output_tokens=out,
        cache_read_tokens=read,
        cache_write_tokens=write,
        max_output_tokens=max_tokens if type(max_tokens) is int else None,
        compacted=compacted,
        started_at=started if isinstance(started, str) else None,
    )


def _chain(
    calls: list[_Call], final: list[BaseMessage]
) -> tuple[list[BaseMessage], list[tuple[_Call, int, bool]], list[BaseMessage]]:
    """Full history, (call, position, compacted) per call, and inserted summaries.

    `final` is the sample's own message list (Inspect's full history, which compaction never
    edits): at a compaction point, and after the last call, the messages it holds after the
    last one seen and that no call sent (a tool result the summary absorbed) join the history.
    At a compaction point, messages `final` does not hold are the strategy's edited copies
    (`CompactionEdit` gives a cleared tool result a new id), never new history.
    """
    history: list[BaseMessage] = []
    seen_ids: set[str] = set()
    seen_prints: set[str] = set()
    answered: set[str] = set()
    inserted: list[BaseMessage] = []
    placed: list[tuple[_Call, int, bool]] = []
    prev_sent: list[str] | None = None
    prints: dict[int, str] = {}  # memoised messages are shared between calls
    final_at = {m.id: i for i, m in enumerate(final) if m.id}

    def known(msg: BaseMessage, printed: str) -> bool:
        """Whether a message of a compacted input is already in the history, or an edit of one."""
        if (msg.id and msg.id in seen_ids) or printed in seen_prints:
            return True
        if isinstance(msg, ToolMessage) and msg.tool_call_id in answered:
            return True
        return bool(final_at) and msg.id not in final_at and not looks_like_summary(msg)

    def fp(msg: BaseMessage) -> str:
        key = id(msg)
        if key not in prints:
            prints[key] = fingerprint(msg)
        return prints[key]

    def add(msg: BaseMessage) -> None:
        printed = fp(msg)
        if looks_like_summary(msg):
            if printed not in seen_prints:
                inserted.append(msg)
                seen_prints.add(printed)
            return
        history.append(msg)
        if msg.id:
            seen_ids.add(msg.id)
        seen_prints.add(printed)
        if isinstance(msg, ToolMessage):
            answered.add(msg.tool_call_id)

    def fill(until: set[str]) -> None:
        """Messages of `final` after the last one in the history, up to one in `until`."""
        at = final_at.get(history[-1].id) if history and history[-1].id else None
        if at is None:
            return
        for msg in final[at + 1 :]:
            if msg.id in until:
                break
            if not known(msg, fp(msg)):
                add(msg)

    for call in calls:
        sent = [fp(m) for m in call.inputs]
        compacted = False
        if prev_sent is None:
            for msg in call.inputs:
                add(msg)
        elif sent[: len(prev_sent)] == prev_sent:
            for msg in call.inputs[len(prev_sent) :]:
                add(msg)
        else:
            compacted = True
            fill({m.id for m in call.inputs if m.id})
            for msg, printed in zip(call.inputs, sent, strict=True):
                if not known(msg, printed):
                    add(msg)
        position = len(history)
        if call.output is not None:
            add(call.output)
        placed.append((call, position, compacted))
        prev_sent = sent + ([fp(call.output)] if call.output is not None else [])
    fill(set())
    return history, placed, inserted


def _check_pairs(s: _Sample, history: list[BaseMessage]) -> None:
    orphan = first_orphan_result(history)
    if orphan is not None:
        i, result = orphan
        raise s.error(
            f"message {i} of the rebuilt history",
            f"tool result for call {result.tool_call_id!r} has no matching tool call in an "
            "earlier assistant message",
        )


# ----------------------------------------------------------------------------- events


@dataclass
class _Events:
    """A sample's events sorted out: model calls, compactions, and tool scopes.

    A scope is where a subagent's calls live: a `tool` span (its calls are inside it), or in
    logs from before spans, a tool event's own nested `events`. `tool_call` maps a scope to the
    id of the tool call that ran it, `parent` to the scope it was called from (None: top level).
    """

    calls: list[_Call] = field(default_factory=list)
    scorer_calls: list[_Call] = field(default_factory=list)
    compactions: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    tool_call: dict[str, str] = field(default_factory=dict)
    parent: dict[str, str | None] = field(default_factory=dict)
    cached: int = 0


def _walk(s: _Sample, events: list[Any]) -> _Events:
    spans: dict[str, tuple[str | None, Any, Any]] = {}
    tool_spans: dict[tuple[Any, str], list[str]] = defaultdict(list)
    tool_events: dict[tuple[Any, str], list[str]] = defaultdict(list)
    nested = not any(isinstance(e, dict) and e.get("event") == "span_begin" for e in events)
    scoring = False  # logs from before spans mark scorers with `step` events
    found = _Events()

    def ancestors(span: Any) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        seen: set[str] = set()
        while isinstance(span, str) and span in spans and span not in seen:
            seen.add(span)
            parent, kind, _ = spans[span]
            out.append((span, kind))
            span = parent
        return out

    def walk(events: list[Any], index: int | None, label: str, outer: str | None) -> None:
        nonlocal scoring
        for j, event in enumerate(events):
            i = j if index is None else index
            where = label.format(j)
            s.expect(event, dict, where, "an event object")
            kind = event.get("event")
            for key in ("span_id", "parent_id"):
                s.expect(event.get(key), (str, type(None)), f"{where}.{key}", "a span id or null")
            if kind == "span_begin":
                span_id = s.expect(event.get("id"), str, f"{where} (span_begin).id", "a span id")
                parent = event.get("parent_id")
                spans[span_id] = (parent, event.get("type"), event.get("name"))
                if event.get("type") == "tool" and isinstance(event.get("name"), str):
                    tool_spans[(parent, event["name"])].append(span_id)
                    chain = ancestors(parent)
                    found.parent[span_id] = next((x for x, k in chain if k == "tool"), None)
            elif kind == "step" and event.get("type") == "scorer":
                scoring = event.get("action") == "begin"
            elif kind == "tool" and isinstance(event.get("id"), str):
                if isinstance(event.get("function"), str):
                    tool_events[(event.get("span_id"), event["function"])].append(event["id"])
                inner = event.get("events")
                if nested and inner:
                    s.expect(inner, list, f"{where} (tool).events", "a list of events")
                    scope = f"tool:{event['id']}"
                    found.tool_call[scope], found.parent[scope] = event["id"], outer
                    walk(inner, i, f"{where} (tool).events[{{}}]", scope)
            elif kind == "compaction" and outer is None:
                found.compactions.append((i, event))
            elif kind == "model":
                where = f"{where} (model)"
                chain = ancestors(event.get("span_id"))
                role = event.get("role")
                call = _Call(
                    event_index=i,
                    event=event,
                    inputs=_inputs(s, event, where),
                    output=_output(s, event, where),
                    role=role if isinstance(role, str) else None,
                    scope=next((x for x, k in chain if k == "tool"), outer),
                )
                if event.get("cache") == "read":
                    found.cached += 1
                if scoring or any(k == "scorer" for _, k in chain):
                    found.scorer_calls.append(replace(call, role="scorer"))  # harness call name
                else:
                    found.calls.append(call)

    walk(events, None, "event {}", None)
    for key, span_ids in tool_spans.items():
        found.tool_call.update(zip(span_ids, tool_events.get(key, []), strict=False))
    return found


SUMMARY_TAGS = (("<previous_summary>", "</previous_summary>"), ("<summary>", "</summary>"))
"""How Inspect versions wrap the summariser's text inside the summary message."""


def _summary_body(msg: BaseMessage) -> str:
    """The summariser's own text inside a summary message (the whole text if untagged)."""
    text = msg.text
    for opening, closing in SUMMARY_TAGS:
        start, end = text.find(opening), text.rfind(closing)
        if start != -1 and end > start:
            return text[start + len(opening) : end].strip()
    return text.strip()


def _split_summariser(
    calls: list[_Call], compactions: list[tuple[int, dict[str, Any]]]
) -> tuple[list[_Call], list[_Call]]:
    """(agent calls, summariser calls): a call just before a summary compaction whose output the
    next agent call's summary message quotes was the harness summarising, not the agent."""
    harness: set[int] = set()
    for event_index, _ in compactions:
        after = next((c for c in calls if c.event_index > event_index), None)
        if after is None:
            continue
        bodies = [_summary_body(m) for m in after.inputs if looks_like_summary(m)]
        bodies = [b for b in bodies if b]
        if not bodies:
            continue
        for call in reversed([c for c in calls if c.event_index < event_index]):
            text = call.output.text if call.output is not None else ""
            if not text or not any(b in text for b in bodies):
                break
            harness.add(call.event_index)
    return (
        [c for c in calls if c.event_index not in harness],
        [c for c in calls if c.event_index in harness],
    )


def _compaction(
    s: _Sample, event_index: int, event: dict[str, Any], turn: Turn
) -> RecordedCompaction:
    """A `compaction` event as a `RecordedCompaction` on `turn`, the first call after it."""
    where = f"event {event_index} (compaction)"
    kind = event.get("type")
    metadata = obj_or_empty(event, "metadata")
    if kind is None:  # some Inspect versions record the strategy only
        kind = _STRATEGY_TYPES.get(str(metadata.get("strategy")), "summary")
    s.expect(kind, str, f"{where}.type", "'summary', 'edit' or 'trim'")
    summary = None
    if kind == "summary":
        found = [m for m in turn.inputs if looks_like_summary(m)]
        summary = found[-1].text if found else None
    started = event.get("timestamp")
    manual = metadata.get("trigger") == "manual"
    return RecordedCompaction(
        turn=turn.index,
        kind=COMPACTION_KINDS.get(kind, kind),
        trigger="manual" if manual else "auto",
        pre_tokens=s.integer(event.get("tokens_before"), f"{where}.tokens_before"),
        post_tokens=s.integer(event.get("tokens_after"), f"{where}.tokens_after"),
        summary=summary,
        started_at=started if isinstance(started, str) else None,
    )


# ----------------------------------------------------------------------------- traces


@dataclass
class _Log:
    source: str
    task: str
    eval_id: str
    model: str | None


def _main_role(calls: list[_Call]) -> str | None:
    """The role whose calls include the longest input (the agent; graders see less)."""
    longest: tuple[int, str | None] | None = None
    for call in calls:
        if longest is None or len(call.inputs) > longest[0]:
            longest = (len(call.inputs), call.role)
    return longest[1] if longest else None


def _build(
    s: _Sample,
    log: _Log,
    trace_id: str,
    calls: list[_Call],
    found: _Events,
    final: list[BaseMessage],
    *,
    parent: str | None = None,
    parent_call: str | None = None,
) -> Trace:
    """The trace of one scope: the top level, or one tool call's subagent."""
    role = _main_role(calls)
    agent = [c for c in calls if c.role == role]
    others = [c for c in calls if c.role != role]
    compactions = [(i, e) for i, e in found.compactions] if parent is None else []
    agent, summariser = _split_summariser(agent, compactions)
    history, placed, inserted = _chain(agent, final)
    _check_pairs(s, history)
    recorder = Recorder()
    turns = [_turn(s, c, i, pos, comp, recorder) for i, (c, pos, comp) in enumerate(placed)]
    recorded: list[RecordedCompaction] = []
    for event_index, event in compactions:
        later = [i for i, (c, _, _) in enumerate(placed) if c.event_index > event_index]
        if later:  # a compaction after the last call changed no recorded input
            recorded.append(_compaction(s, event_index, event, turns[later[0]]))
    flagged = {c.turn for c in recorded}
    turns = [replace(t, compacted=True) if t.index in flagged else t for t in turns]
    scorers = found.scorer_calls if parent is None else []
    harness = sorted([*others, *summariser, *scorers], key=lambda c: c.event_index)
    where = f"event {agent[0].event_index} (model).tools"
    tools = s.deep(s.expect(agent[0].event.get("tools") or [], list, where, "a list"), where)
    model = next((t.model for t in turns if t.model), None) or log.model
    return Trace(
        trace_id=trace_id,
        format=NAME,
        source=log.source,
        messages=history,
        turns=turns,
        tools=tools,
        model=model,
        provider=next((t.provider for t in turns if t.provider), None),
        parent_trace_id=parent,
        parent_tool_call_id=parent_call,
        harness_calls=[_turn(s, c, i, -1, False) for i, c in enumerate(harness)],
        inserted=inserted,
        metadata={
            "task": log.task,
            "eval_id": log.eval_id,
            "sample_id": s.sample_id,
            "epoch": s.epoch,
        },
        compactions=recorded,
    )


def _final_messages(s: _Sample, sample: dict[str, Any]) -> list[BaseMessage]:
    """`sample.messages`: the conversation as the sample ended."""
    raw = sample.get("messages")
    raw = [] if raw is None else s.expect(raw, list, "messages", "a list of chat messages")
    return [_message(s, m, f"messages[{i}]") for i, m in enumerate(raw)]


def _from_messages(s: _Sample, log: _Log, trace_id: str, messages: list[BaseMessage]) -> Trace:
    _check_pairs(s, messages)
    trace = from_messages(
        messages, trace_id=trace_id, format=NAME, source=log.source, model=log.model
    )
    trace.metadata = {
        "task": log.task,
        "eval_id": log.eval_id,
        "sample_id": s.sample_id,
        "epoch": s.epoch,
    }
    trace.notes.append(
        "This sample has no model events (an older Inspect log, or events were not logged): "
        "turns are rebuilt from sample.messages, each assistant message taken as a call that "
        "saw every message before it, with no per-call usage, system prompt or tool schemas."
    )
    return trace


def _sample_trace(log: _Log, sample: Any, index: int) -> Trace:
    if not isinstance(sample, dict):
        raise TraceFormatError(
            f"samples[{index}]: expected a sample object, got {_type_name(sample)}",
            source=log.source,
        )
    sample_id, epoch = sample.get("id"), sample.get("epoch", 1)
    if type(epoch) is not int:
        raise TraceFormatError(
            f"samples[{index}].epoch: expected an integer epoch, got {_type_name(epoch)}",
            source=log.source,
        )
    if not isinstance(sample_id, str | int) or isinstance(sample_id, bool):
        raise TraceFormatError(
            f"samples[{index}].id: expected a string or integer sample id, got "
            f"{_type_name(sample_id)}",
            source=log.source,
        )
    s = _Sample(log.source, sample_id, epoch, {})
    legacy = sample.get("transcript")  # logs before 0.3.50: {"events", "content"}
    if isinstance(legacy, dict):
        sample = {**sample, "events": legacy.get("events"), "attachments": legacy.get("content")}
    attachments = sample.get("attachments")
    if attachments is not None:
        s.attachments = s.expect(attachments, dict, "attachments", "an object of hash: text")
    pooled = sample.get("events_data")
    if pooled is not None:
        s.expect(pooled, dict, "events_data", "an object with 'messages' and 'calls'")
        pool = pooled.get("messages")
        s.pool = s.expect([] if pool is None else pool, list, "events_data.messages", "a list")
    trace_id = f"{log.task}:{log.eval_id}:{sample_id}:{epoch}"
    events = sample.get("events")
    events = [] if events is None else s.expect(events, list, "events", "a list of events")
    found = _walk(s, events)
    final = _final_messages(s, sample)
    top = [c for c in found.calls if c.scope is None]
    if not top:
        return _from_messages(s, log, trace_id, final)
    trace = _build(s, log, trace_id, top, found, final)
    scopes: dict[str, list[_Call]] = defaultdict(list)
    for call in found.calls:
        if call.scope is not None:
            scopes[call.scope].append(call)

    def attach(parent: Trace, scope: str | None) -> None:
        """Subagents called from `scope`, nested as they were called."""
        for child, calls in scopes.items():
            if found.parent.get(child) != scope:
                continue
            call_id = found.tool_call.get(child)
            sub_id = f"{parent.trace_id}/{call_id or child}"
            sub = _build(
                s, log, sub_id, calls, found, [], parent=parent.trace_id, parent_call=call_id
            )
            parent.subagents.append(sub)
            attach(sub, child)

    attach(trace, None)
    trace.notes.extend(_scorer_note(trace, len(found.scorer_calls)))
    if all(t.input_tokens is None for t in trace.turns):
        trace.notes.append("The log records no token usage for this sample's model calls.")
    if found.cached:
        trace.notes.append(
            f"{found.cached} model calls were answered from Inspect's local cache; their usage "
            "is what the cache recorded."
        )
    return trace


def _scorer_note(trace: Trace, scorers: int) -> list[str]:
    """Scorer (grader) model calls are the eval's, not the agent's: kept in `harness_calls`
    (named `scorer`), never replayed; the note says how much of the billed input they are,
    which can be most of it (a model-graded scorer re-reads the whole transcript)."""
    if not scorers:
        return []
    calls = [c for c in trace.harness_calls if c.name == "scorer"]
    scored = sum(c.input_tokens or 0 for c in calls)
    agent = sum(t.input_tokens or 0 for t in trace.turns)
    share = f", {scored / (scored + agent):.0%} of the sample's input tokens" if scored else ""
    models = sorted({c.model for c in calls if c.model})
    return [
        f"{scorers} scorer model calls ({', '.join(models) or 'model not recorded'}: "
        f"{scored:,} input tokens{share}) are kept in harness_calls as 'scorer' calls, not "
        "replayed as the agent's turns; ctxlab.harness_traces(trace, 'scorer') gives each as "
        "a trace of its own."
    ]


def read(values: list[tuple[Any, int | None]], source: str) -> list[Trace]:
    """One trace per sample (and epoch) of an EvalLog document."""
    doc = values[0][0]
    spec = doc["eval"]
    task = spec.get("task")
    if not isinstance(task, str):
        raise TraceFormatError(
            f"eval.task: expected the task name (a string), got {_type_name(task)}", source=source
        )
    eval_id = spec.get("eval_id") or spec.get("task_id") or spec.get("run_id") or ""
    model = spec.get("model")
    log = _Log(source, task, str(eval_id), model if isinstance(model, str) else None)
    samples = doc.get("samples")
    if not samples:
        raise TraceFormatError(
            "the log has no samples (written with log_samples=False, or the run had not "
            "finished a sample); expected 'samples' with each sample's events and messages",
            source=source,
        )
    if not isinstance(samples, list):
        raise TraceFormatError(
            f"samples: expected a list of samples, got {_type_name(samples)}", source=source
        )
    traces = [_sample_trace(log, sample, i) for i, sample in enumerate(samples)]
    config = _compaction_config(doc.get("plan"))
    packages = spec.get("packages")
    version = packages.get("inspect_ai") if isinstance(packages, dict) else None
    for trace in traces:
        if config is not None:
            trace.metadata["compaction_config"] = config
        if isinstance(version, str):  # how its compaction counted (`inspect.counts_usage`)
            trace.metadata["inspect_version"] = version
    return traces


def _compaction_config(plan: Any) -> dict[str, Any] | None:
    """The compaction a solver of the plan was given (`react(compaction=...)`: `{"type":
    "summary" | "edit" | "trim" | "native" | "auto", "threshold", ...}`), as the log records
    its parameters; the `inspect-*` presets run with it (`check_replay.recorded_settings`)."""
    steps = plan.get("steps") if isinstance(plan, dict) else None
    for step in steps if isinstance(steps, list) else []:
        params = step.get("params") if isinstance(step, dict) else None
        config = params.get("compaction") if isinstance(params, dict) else None
        if isinstance(config, dict) and isinstance(config.get("type"), str):
            return config
    return None
