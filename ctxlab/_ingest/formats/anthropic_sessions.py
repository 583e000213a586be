"""Anthropic Managed Agents session event streams (`client.beta.sessions.*`) to canonical `Trace`s.

A Managed Agents session is a server-side agent loop; what a user keeps is its event stream:
`user.message`, `span.model_request_start` / `span.model_request_end` (with the call's
`model_usage`), the `agent.message` / `agent.tool_use` / `agent.mcp_tool_use` events the model
produced in between, and the `agent.tool_result` / `agent.mcp_tool_result` events that answer
them. Two shapes are read:

* bare events, one per JSONL line, or a JSON list of them, or an `events.list` page
  (`{"data": [...]}`);
* a recording of SDK calls, one `[sdk_method, payload]` array per line (as LangSmith's own test
  fixtures keep them): `sessions.create` gives the agent (model, system prompt), streamed and
  listed events give the conversation; `events.send` lines are skipped, because the stream
  echoes every event the user sent.

The per-call input is not recorded: each call is taken to see the whole history before it, and
the trace says so in its notes, as it does for the tool schemas (only toolset names are kept).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeGuard

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.inputs import Inputs
from ctxlab._trace import Trace, Turn

NAME = "anthropic-managed-agents"
DESCRIPTION = (
    "an Anthropic Managed Agents session event stream (events with 'type' such as "
    "'user.message' or 'span.model_request_end', or recorded [sdk_method, payload] lines)"
)

_PREFIXES = ("user.", "agent.", "session.", "span.")
_SDK = "client.beta.sessions."
_TOOL_USES = ("agent.tool_use", "agent.mcp_tool_use", "agent.custom_tool_use")
_TOOL_RESULTS = {
    "agent.tool_result": "tool_use_id",
    "agent.mcp_tool_result": "mcp_tool_use_id",
    "user.custom_tool_result": "custom_tool_use_id",
}

Values = list[tuple[Any, int | None]]


def _is_event(value: Any) -> TypeGuard[dict[str, Any]]:
    return (
        isinstance(value, dict)
        and isinstance(value.get("type"), str)
        and value["type"].startswith(_PREFIXES)
        and "id" in value
        and "processed_at" in value
    )


def _is_sdk_line(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], str)
        and value[0].startswith(_SDK)
    )


def sniff(values: Values) -> bool:
    """A recorded SDK call, a session event, a list or a page of events."""
    if not values:
        return False
    first = values[0][0]
    if _is_sdk_line(first) or _is_event(first):
        return True
    if isinstance(first, dict) and isinstance(first.get("data"), list) and first["data"]:
        return _is_event(first["data"][0])
    return isinstance(first, list) and bool(first) and _is_event(first[0])


@dataclass(slots=True)
class _Session:
    """What the recording says of the session, gathered before the conversation is built."""

    session_id: str | None = None
    model: str | None = None
    system: str | None = None
    agent_name: str | None = None
    toolsets: list[str] = field(default_factory=list)
    events: list[tuple[dict[str, Any], int | None]] = field(default_factory=list)


def _fail(message: str, source: str, line: int | None, event: Any = None) -> TraceFormatError:
    event_id = event.get("id") if isinstance(event, dict) else None
    where = f"event {event_id}: " if isinstance(event_id, str) else ""
    return TraceFormatError(where + message, source=source, line=line)


def _text(value: Any, what: str, source: str, line: int | None, event: Any) -> str:
    """Text of an event's content: a string, or text and text-document blocks joined."""
    if value is None or isinstance(value, str):
        return value or ""
    if not isinstance(value, list):
        raise _fail(f"{what} must be a list of content blocks", source, line, event)
    parts = []
    for block in value:
        if not isinstance(block, dict):
            raise _fail(
                f"{what} holds a {type(block).__name__}; expected blocks", source, line, event
            )
        if block.get("type") == "text":
            text = block.get("text")
        elif block.get("type") == "document" and isinstance(block.get("source"), dict):
            text = block["source"].get("data")
        else:
            continue
        if not isinstance(text, str):
            raise _fail(f"{what}: a {block.get('type')} block has no text", source, line, event)
        parts.append(text)
    return "\n".join(parts)


def _session(values: Values, source: str) -> _Session:
    session = _Session()
    for value, line in values:
        if _is_sdk_line(value):
            method, payload = value
            if method.endswith("sessions.create") and isinstance(payload, dict):
                _agent(session, payload, source, line)
            elif method.endswith(("events.stream", "events.list")):
                _collect(session, payload, source, line)
        else:
            _collect(session, value, source, line)
    return session


def _agent(session: _Session, payload: dict[str, Any], source: str, line: int | None) -> None:
    agent = payload.get("agent")
    if not isinstance(agent, dict):
        raise _fail("sessions.create: 'agent' must be an object", source, line)
    model = agent.get("model")
    model = model.get("id") if isinstance(model, dict) else model
    system = agent.get("system")
    if model is not None and not isinstance(model, str) or not isinstance(system, str | None):
        raise _fail("sessions.create: agent 'model' and 'system' must be strings", source, line)
    tools = agent.get("tools") or []
    if not isinstance(tools, list):
        raise _fail("sessions.create: agent 'tools' must be a list", source, line)
    session.session_id = payload.get("id") if isinstance(payload.get("id"), str) else None
    session.model, session.system = model, system
    session.agent_name = agent.get("name") if isinstance(agent.get("name"), str) else None
    session.toolsets = [
        str(t.get("mcp_server_name") or t.get("type")) for t in tools if isinstance(t, dict)
    ]


def _collect(session: _Session, payload: Any, source: str, line: int | None) -> None:
    items = payload.get("data") if isinstance(payload, dict) and "data" in payload else payload
    for item in items if isinstance(items, list) else [items]:
        if not _is_event(item):
            raise _fail(
                "expected a session event (an object with 'id', 'type' and 'processed_at')",
                source,
                line,
            )
        session.events.append((item, line))


class _Builder:
    """Replays the event stream into a history and one turn per model request."""

    def __init__(self, session: _Session, source: str) -> None:
        self.session, self.source = session, source
        self.history: list[BaseMessage] = []
        if session.system:
            self.history.append(SystemMessage(content=session.system))
        self.turns: list[Turn] = []
        self.call: dict[str, Any] | None = None
        self.open_tool_calls: set[str] = set()

    def run(self) -> None:
        for event, line in self.session.events:
            kind = event["type"]
            if kind == "user.message":
                self.history.append(
                    HumanMessage(
                        content=_text(event.get("content"), "content", self.source, line, event)
                    )
                )
            elif kind == "span.model_request_start":
                self._start(event)
            elif kind == "agent.message":
                self._open(event)["text"].append(
                    _text(event.get("content"), "content", self.source, line, event)
                )
            elif kind in _TOOL_USES:
                self._tool_use(event, line)
            elif kind == "span.model_request_end":
                self._end(event, line)
            elif kind in _TOOL_RESULTS:
                self._tool_result(event, _TOOL_RESULTS[kind], line)
        if self.call is not None:
            self._finish(None)

    def _start(self, event: dict[str, Any]) -> None:
        if self.call is not None:
            self._finish(None)
        self.call = {"text": [], "tool_calls": [], "started_at": event.get("processed_at")}

    def _open(self, event: dict[str, Any]) -> dict[str, Any]:
        if self.call is None:  # an agent event outside a recorded request span
            self._start(event)
        assert self.call is not None
        return self.call

    def _tool_use(self, event: dict[str, Any], line: int | None) -> None:
        name, args = event.get("name"), event.get("input", {})
        if not isinstance(name, str) or not isinstance(args, dict):
            raise _fail(
                "a tool use needs a string 'name' and an object 'input'", self.source, line, event
            )
        if not isinstance(event.get("id"), str):
            raise _fail("a tool use needs a string 'id'", self.source, line, event)
        server = event.get("mcp_server_name")
        if isinstance(server, str):
            name = f"mcp__{server}__{name}"
        self._open(event)["tool_calls"].append(
            {"name": name, "args": args, "id": event["id"], "type": "tool_call"}
        )

    def _end(self, event: dict[str, Any], line: int | None) -> None:
        usage = event.get("model_usage") or {}
        if not isinstance(usage, dict) or not all(
            isinstance(v, int | None) for v in usage.values() if not isinstance(v, dict)
        ):
            raise _fail("'model_usage' must be an object of token counts", self.source, line, event)
        self._open(event)
        self._finish(usage)

    def _finish(self, usage: dict[str, Any] | None) -> None:
        call, self.call = self.call, None
        assert call is not None
        position = len(self.history)
        usage = usage or {}
        fresh, read, write, out = (
            usage.get(k)
            for k in (
                "input_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
                "output_tokens",
            )
        )
        total = None if fresh is None else fresh + (read or 0) + (write or 0)
        message = AIMessage(
            content="\n".join(t for t in call["text"] if t),
            tool_calls=call["tool_calls"],
            response_metadata={"model_name": self.session.model} if self.session.model else {},
        )
        self.turns.append(
            Turn(
                index=len(self.turns),
                position=position,
                inputs=Inputs.prefix(self.history, position),
                output=message,
                model=self.session.model,
                provider="anthropic",
                input_tokens=total,
                output_tokens=out,
                cache_read_tokens=read,
                cache_write_tokens=write,
                started_at=call["started_at"],
            )
        )
        self.history.append(message)
        self.open_tool_calls.update(c["id"] for c in call["tool_calls"])

    def _tool_result(self, event: dict[str, Any], key: str, line: int | None) -> None:
        if self.call is not None and self.call["tool_calls"]:
            self._finish(None)  # the request ended without its span: its tool uses are done
        call_id = event.get(key)
        if not isinstance(call_id, str):
            raise _fail(
                f"{event['type']} needs a string '{key}' naming its tool use",
                self.source,
                line,
                event,
            )
        if call_id not in self.open_tool_calls:
            raise _fail(
                f"{event['type']} answers {call_id!r}, which is no earlier tool use "
                f"(expected '{key}' to name one)",
                self.source,
                line,
                event,
            )
        self.open_tool_calls.discard(call_id)
        self.history.append(
            ToolMessage(
                content=_text(event.get("content"), "content", self.source, line, event),
                tool_call_id=call_id,
                status="error" if event.get("is_error") else "success",
            )
        )


def read(values: Values, source: str) -> list[Trace]:
    """The session's conversation, one turn per recorded model request."""
    session = _session(values, source)
    if not session.events:
        raise TraceFormatError(
            "no session events recorded (expected events.stream lines)", source=source
        )
    builder = _Builder(session, source)
    builder.run()
    notes = [
        "per-call inputs are not recorded: each call is taken to see the whole history before it",
        "tool schemas are not recorded (only toolset names) and count as zero tokens",
    ]
    if session.system is None:
        notes.append("no system prompt recorded (no sessions.create line)")
    if any(e["type"] == "agent.thinking" for e, _ in session.events):
        notes.append("thinking events carry no text and are left out of the messages")
    trace_id = session.session_id or source.rsplit("/", 1)[-1].split(".")[0]
    return [
        Trace(
            trace_id=trace_id,
            format=NAME,
            source=source,
            messages=builder.history,
            turns=builder.turns,
            model=session.model,
            provider="anthropic",
            metadata={"agent_name": session.agent_name, "toolsets": session.toolsets},
            notes=notes,
        )
    ]
