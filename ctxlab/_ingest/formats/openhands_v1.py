"""OpenHands V1 (software-agent-sdk) conversations: typed events with a `kind`.

The V1 SDK persists a conversation as a folder, `<conversation id>/base_state.json` beside
`events/event-NNNNN-<event id>.json`, one event per file (`openhands.sdk.conversation.
event_store`); the same events also travel as a JSON list or JSON Lines. An event is `{id,
timestamp, source: agent|user|environment, kind, ...}`; the kinds a model sees
(`openhands.sdk.event`, `LLMConvertibleEvent`):

* `SystemPromptEvent`: `system_prompt` (a text part) and `tools` (the tool definitions, whose
  parameter schemas are not recorded);
* `MessageEvent`: `llm_message {role, content: [text parts]}`; an agent message with an
  `llm_response_id` is a model call's answer;
* `ActionEvent`: one tool call (`tool_call {id, name, arguments}`, `thought`); the actions that
  share an `llm_response_id` are the calls of one answer, one model call;
* `ObservationEvent`, `AgentErrorEvent`, `UserRejectObservation`: the result of the call named
  by `tool_call_id`;
* `Condensation`: the condenser dropped `forgotten_event_ids` from every later view and put
  `summary` at `summary_offset` (a `CondensationSummaryEvent`, sent as a user message).

Every call's input is the view the SDK builds from the events before it (`View.from_events`):
the convertible events not forgotten, with the latest summary at its offset. Per-call usage is
not in the events: `base_state.json` keeps it (`stats.usage_to_metrics[*].token_usages`, each
with the `response_id` the events name), read when it sits beside `events/`.

A folder of one-event files is one conversation, read by its first event file: the later
event files and `base_state.json` give no trace of their own, so loading the folder (or the
first file) loads the conversation once.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.tool import ToolCall

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats.fields import describe, obj_or_empty
from ctxlab._ingest.formats.messages import MessageDecodeError
from ctxlab._ingest.formats.redaction import arguments_or_text
from ctxlab._ingest.inputs import Inputs
from ctxlab._trace import RecordedCompaction, Trace, Turn

if TYPE_CHECKING:
    from ctxlab._ingest.formats.registry import Values

NAME = "openhands-v1"
DESCRIPTION = (
    "an OpenHands V1 (software-agent-sdk) conversation (events/event-NNNNN-<id>.json files, "
    "or a JSON list or JSON Lines of events, each an object with 'kind', 'id' and 'source')"
)

RESULTS = frozenset({"ObservationEvent", "AgentErrorEvent", "UserRejectObservation"})
"""Kinds that answer a tool call."""

SEEN = frozenset({"SystemPromptEvent", "MessageEvent", "ActionEvent", *RESULTS})
"""Kinds a model sees, besides the condensation summary."""

KINDS = SEEN | {
    "Condensation",
    "CondensationRequest",
    "CondensationSummaryEvent",
    "ConversationStateUpdateEvent",
    "PauseEvent",
    "SystemPromptUpdateEvent",
    "TokenEvent",
    "LLMCompletionLogEvent",
    "ConversationErrorEvent",
    "HookExecutionEvent",
}
"""Event kinds of the V1 SDK; the ones not in `SEEN` and not `Condensation` are skipped."""

EVENT_FILE = re.compile(r"event-(\d+)-.*\.json$")
"""The SDK's name for a persisted event (`EVENT_NAME_RE` in its event store)."""


def _is_event(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("kind") in KINDS
        and isinstance(value.get("id"), str)
        and "source" in value
    )


def _is_state(value: Any) -> bool:
    """`base_state.json`: the conversation's persisted state (agent, stats, status)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("agent"), dict)
        and "stats" in value
        and "execution_status" in value
    )


def _is_instance(value: Any) -> bool:
    """An evaluation line of OpenHands/benchmarks: `instance_id` and a `history` of events."""
    if not (isinstance(value, dict) and "instance_id" in value):
        return False
    history = value.get("history")
    return isinstance(history, list) and bool(history) and _is_event(history[0])


def sniff(values: Values) -> bool:
    """One event or a persisted state (a file of the SDK's folder), a JSON list of events,
    JSON Lines of events, or evaluation lines whose `history` holds events."""
    if len(values) == 1 and values[0][1] is None:
        doc = values[0][0]
        if isinstance(doc, list):
            return bool(doc) and _is_event(doc[0])
        return _is_event(doc) or _is_state(doc) or _is_instance(doc)
    return bool(values) and (
        all(_is_event(v) for v, _ in values) or all(_is_instance(v) for v, _ in values)
    )


def _number(name: str) -> int:
    """An event file's place in its conversation (`event-00012-...` is 12)."""
    match = EVENT_FILE.match(name)
    return int(match.group(1)) if match else -1


@lru_cache(maxsize=16)
def _event_names(folder: str, mtime_ns: int) -> tuple[str, ...]:
    """The event files of a folder in the SDK's order. Cached by the folder's modification
    time: each of its N files asks, and N scans of N names made a 1,000-event folder load in
    2.5 s of CPU."""
    del mtime_ns  # part of the cache key only: a changed folder is scanned again
    return tuple(sorted((n for n in os.listdir(folder) if EVENT_FILE.match(n)), key=_number))


def _events_of_folder(path: Path) -> list[Path] | None:
    """The event files of `path`'s folder in the SDK's order, when `path` is the first of
    them; None when it is a later one (the first reads the conversation)."""
    names = _event_names(str(path.parent), path.parent.stat().st_mtime_ns)
    if not names or names[0] != path.name:
        return None
    return [path.parent / name for name in names]


def _load_json(path: Path, source: str) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise TraceFormatError(f"{path.name}: not readable JSON ({exc})", source=source) from exc


def _text(parts: Any) -> str:
    """The text of a content-part list (images and other parts are not text)."""
    if isinstance(parts, str):
        return parts
    if isinstance(parts, dict):
        parts = [parts]
    if not isinstance(parts, list):
        return ""
    return "\n".join(
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


@dataclass
class _Call:
    """One model call: its answer's place in the history, the view it saw, its response id."""

    position: int
    inputs: Inputs
    response_id: str | None
    started_at: str | None


@dataclass
class _Builder:
    source: str
    history: list[BaseMessage] = field(default_factory=list)
    view: list[tuple[str, BaseMessage]] = field(default_factory=list)
    """The event id and message of each entry of the current view."""
    calls: list[_Call] = field(default_factory=list)
    compactions: list[RecordedCompaction] = field(default_factory=list)
    inserted: list[BaseMessage] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    answers: dict[str, AIMessage] = field(default_factory=dict)
    """Each response's answer, by `llm_response_id`: later actions of it add their calls."""

    def add(self, event_id: str, message: BaseMessage) -> None:
        self.history.append(message)
        self.view.append((event_id, message))

    def call(self, event_id: str, message: AIMessage, response_id: str | None, at: Any) -> None:
        """A new answer: the view before it is its call's input (the history itself, shared,
        until a condensation makes them differ)."""
        if self.compactions:
            inputs = Inputs.of(_matched([m for _, m in self.view]))
        else:
            inputs = Inputs.prefix(self.history, len(self.history))
        self.calls.append(
            _Call(len(self.history), inputs, response_id, at if isinstance(at, str) else None)
        )
        self.add(event_id, message)


def _matched(view: list[BaseMessage]) -> list[BaseMessage]:
    """The view without tool results whose call was forgotten, as the SDK's view drops them
    (`ToolCallMatchingProperty`)."""
    asked = {c["id"] for m in view if isinstance(m, AIMessage) for c in m.tool_calls}
    return [m for m in view if not isinstance(m, ToolMessage) or m.tool_call_id in asked]


def _action(b: _Builder, event: dict[str, Any], where: str) -> None:
    """A tool call; the actions of one response are one answer with all their calls."""
    call = obj_or_empty(event, "tool_call")
    call_id = event.get("tool_call_id") or call.get("id")
    name = event.get("tool_name") or call.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise TraceFormatError(
            f"{where}: an ActionEvent needs 'tool_call_id' and 'tool_name' (or 'tool_call' "
            "with 'id' and 'name')",
            source=b.source,
        )
    try:
        args, unparsed = arguments_or_text(call.get("arguments"))
    except MessageDecodeError as exc:
        raise TraceFormatError(f"{where}.tool_call.arguments: {exc}", source=b.source) from exc
    if unparsed:
        b.notes.append(f"{where}: tool-call arguments that are not JSON are kept as text.")
    tool_call = ToolCall(id=call_id, name=name, args=args, type="tool_call")
    response_id = event.get("llm_response_id")
    if isinstance(response_id, str) and response_id in b.answers:
        answer = b.answers[response_id]
        answer.tool_calls = [*answer.tool_calls, tool_call]
        return
    thought = _text(event.get("thought"))
    reasoning = event.get("reasoning_content")
    extra = {"reasoning_content": reasoning} if isinstance(reasoning, str) and reasoning else {}
    answer = AIMessage(content=thought, tool_calls=[tool_call], additional_kwargs=extra)
    b.call(
        event["id"],
        answer,
        response_id if isinstance(response_id, str) else None,
        event.get("timestamp"),
    )
    if isinstance(response_id, str):
        b.answers[response_id] = answer


def _observed(observation: dict[str, Any]) -> str:
    """An observation's text: its `content` parts, or (SDK releases of 2025, such as
    `ExecuteBashObservation`) its `output` or `message` text."""
    if "content" in observation:
        return _text(observation["content"])
    for key in ("output", "message"):
        if isinstance(observation.get(key), str):
            return str(observation[key])
    return ""


def _result(b: _Builder, event: dict[str, Any], where: str) -> None:
    call_id = event.get("tool_call_id")
    if not isinstance(call_id, str):
        raise TraceFormatError(f"{where}: a {event['kind']} needs 'tool_call_id'", source=b.source)
    if event["kind"] == "ObservationEvent":
        text = _observed(obj_or_empty(event, "observation"))
    elif event["kind"] == "AgentErrorEvent":
        text = str(event.get("error", ""))
    else:
        text = str(event.get("rejection_reason", ""))
    name = event.get("tool_name")
    b.add(
        event["id"],
        ToolMessage(
            content=text, tool_call_id=call_id, name=name if isinstance(name, str) else None
        ),
    )


def _condensation(b: _Builder, event: dict[str, Any], where: str) -> None:
    """The condenser's record: later views drop the forgotten events and carry the summary."""
    forgotten = event.get("forgotten_event_ids") or []
    if not isinstance(forgotten, list):
        raise TraceFormatError(
            f"{where}.forgotten_event_ids: expected a list, got {describe(forgotten)}",
            source=b.source,
        )
    gone = set(forgotten)
    b.view = [(i, m) for i, m in b.view if i not in gone and i != "summary"]
    summary = event.get("summary")
    if isinstance(summary, str):
        offset = event.get("summary_offset")
        at = offset if isinstance(offset, int) and 0 <= offset <= len(b.view) else len(b.view)
        message = HumanMessage(content=summary)
        b.view.insert(at, ("summary", message))
        b.inserted.append(message)
    b.compactions.append(
        RecordedCompaction(
            turn=len(b.calls),
            kind="condensation",
            trigger="auto",
            summary=summary if isinstance(summary, str) else None,
            started_at=event.get("timestamp") if isinstance(event.get("timestamp"), str) else None,
        )
    )


def _walk(b: _Builder, events: list[tuple[dict[str, Any], str]]) -> None:
    for event, where in events:
        kind = event["kind"]
        if kind == "SystemPromptEvent":
            b.add(event["id"], SystemMessage(content=_text(event.get("system_prompt"))))
            tools = event.get("tools")
            if isinstance(tools, list):
                b.tools = [
                    {"name": t.get("title") or t.get("name"), "description": t.get("description")}
                    for t in tools
                    if isinstance(t, dict)
                ]
        elif kind == "MessageEvent":
            message = obj_or_empty(event, "llm_message")
            text = _text(message.get("content"))
            if event.get("source") == "agent" or message.get("role") == "assistant":
                response_id = event.get("llm_response_id")
                b.call(
                    event["id"],
                    AIMessage(content=text),
                    response_id if isinstance(response_id, str) else None,
                    event.get("timestamp"),
                )
            else:
                b.add(event["id"], HumanMessage(content=text))
        elif kind == "ActionEvent":
            _action(b, event, where)
        elif kind in RESULTS:
            _result(b, event, where)
        elif kind == "Condensation":
            _condensation(b, event, where)


def _usages(state: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each response id's recorded usage, and what the state says of the agent's model."""
    by_id: dict[str, dict[str, Any]] = {}
    stats = obj_or_empty(state, "stats")
    for metrics in obj_or_empty(stats, "usage_to_metrics").values():
        if not isinstance(metrics, dict):
            continue
        for usage in metrics.get("token_usages") or []:
            if isinstance(usage, dict) and isinstance(usage.get("response_id"), str):
                by_id[usage["response_id"]] = usage
    llm = obj_or_empty(obj_or_empty(state, "agent"), "llm")
    return by_id, llm


def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _conversation(
    events: list[tuple[Any, str]],
    state: dict[str, Any] | None,
    trace_id: str,
    source: str,
    model: str | None = None,
) -> Trace:
    """The trace of one conversation's events; `model` names the model where the state does
    not (an evaluation line's `metadata.llm.model`)."""
    checked = []
    for event, where in events:
        if not _is_event(event):
            raise TraceFormatError(
                f"{where}: expected an event object with 'kind', 'id' and 'source', got "
                f"{describe(event)}",
                source=source,
            )
        checked.append((event, where))
    b = _Builder(source)
    _walk(b, checked)
    if not b.calls:
        raise TraceFormatError(
            "expected at least one model call (an ActionEvent or an agent MessageEvent)",
            source=source,
        )
    usages, llm = _usages(state or {})
    if isinstance(llm.get("model"), str):
        model = llm["model"]
    turns = []
    for i, call in enumerate(b.calls):
        usage = usages.get(call.response_id or "", {})
        answer = b.history[call.position]
        turns.append(
            Turn(
                index=i,
                position=call.position,
                inputs=call.inputs,
                output=answer if isinstance(answer, AIMessage) else None,
                model=usage.get("model") or model,
                run_id=call.response_id,
                input_tokens=_count(usage, "prompt_tokens"),
                output_tokens=_count(usage, "completion_tokens"),
                cache_read_tokens=_count(usage, "cache_read_tokens"),
                cache_write_tokens=_count(usage, "cache_write_tokens"),
                compacted=any(c.turn == i for c in b.compactions),
                started_at=call.started_at,
            )
        )
    compactions = []
    for c in b.compactions:
        if c.turn >= len(turns):
            b.notes.append("A Condensation after the last call: no call saw its view.")
            continue
        before = turns[c.turn - 1].input_tokens if c.turn > 0 else None
        compactions.append(replace(c, pre_tokens=before, post_tokens=turns[c.turn].input_tokens))
    windows = {u.get("context_window") for u in usages.values()} - {None, 0}
    metadata: dict[str, Any] = {"events": len(checked)}
    if len(windows) == 1:
        metadata["context_window"] = windows.pop()
    notes = [
        "OpenHands V1 events: each call's input is the view the SDK builds from the events "
        "before it (forgotten events dropped, the condenser's summary at its offset).",
        *b.notes,
    ]
    if b.tools:
        notes.append(
            "The tool definitions record names and descriptions, not parameter schemas: "
            "the schemas are not counted."
        )
    if state is None:
        notes.append(
            "No per-call usage: the events do not carry it, and no base_state.json (which "
            "keeps it) sits beside them."
        )
    elif all(t.input_tokens is None for t in turns):
        notes.append("base_state.json records no usage for these calls' response ids.")
    return Trace(
        trace_id=trace_id,
        format=NAME,
        source=source,
        messages=b.history,
        turns=turns,
        tools=b.tools,
        model=model,
        compactions=compactions,
        inserted=b.inserted,
        metadata=metadata,
        notes=notes,
    )


def read(values: Values, source: str) -> list[Trace]:
    """The conversation of a folder (read by its first event file), or of a list or JSON
    Lines of events; a later event file or the state file alone gives none."""
    path = Path(source)
    if all(_is_instance(v) for v, _ in values):
        return [_instance(v, line, source) for v, line in values]
    if len(values) == 1 and values[0][1] is None and not isinstance(values[0][0], list):
        doc = values[0][0]
        if _is_state(doc):
            return []
        if not EVENT_FILE.match(path.name):
            return [_conversation([(doc, "event")], None, path.stem, source)]
        files = _events_of_folder(path)
        if files is None:
            return []
        events = [(_load_json(p, source), p.name) for p in files]
        folder = path.parent.parent if path.parent.name == "events" else path.parent
        state_path = folder / "base_state.json"
        state = _load_json(state_path, source) if state_path.is_file() else None
        return [_conversation(events, state if _is_state(state) else None, folder.name, source)]
    if values[0][1] is None:
        items = [(e, f"[{i}]") for i, e in enumerate(values[0][0])]
    else:
        items = [(v, f"line {line}") for v, line in values]
    return [_conversation(items, None, path.name.split(".")[0], source)]


def _instance(line: dict[str, Any], number: int | None, source: str) -> Trace:
    """One evaluation line: its `history` is the conversation; the `instruction` the harness
    sent first is the first user message when the history holds none."""
    at = f"line {number}: " if number is not None else ""
    events = [(e, f"{at}history[{i}]") for i, e in enumerate(line["history"])]
    instruction = line.get("instruction")
    asked = any(
        isinstance(e, dict) and e.get("kind") == "MessageEvent" and e.get("source") == "user"
        for e, _ in events
    )
    first = None
    if isinstance(instruction, str) and not asked:
        first = {
            "id": "instruction",
            "kind": "MessageEvent",
            "source": "user",
            "llm_message": {"role": "user", "content": instruction},
        }
        events.insert(0, (first, f"{at}instruction"))
    llm = obj_or_empty(obj_or_empty(line, "metadata"), "llm")
    model = llm["model"] if isinstance(llm.get("model"), str) else None
    trace = _conversation(events, None, str(line["instance_id"]), source, model)
    if first is not None:
        trace.notes.append(
            "The history holds no user message: the line's 'instruction' is taken as the "
            "first one, as the evaluation harness sends it."
        )
    return trace
