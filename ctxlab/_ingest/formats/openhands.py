"""OpenHands event streams and evaluation `output.jsonl` files as traces.

Two shapes, one event model (shared/research/trace-formats.md §2.8):

* an evaluation `output.jsonl`: one instance per line, `{instance_id, instruction, metadata,
  history: [event], metrics, ...}`, one trace per line;
* a bare event stream: a JSON list of events (the UI's trajectory download and OpenHands'
  replay fixtures such as `tests/runtime/trajs/*.json`).

An event is `{id, timestamp, source, action | observation, message, args, content, extras,
cause, llm_metrics, tool_call_metadata}`. The messages are rebuilt the way OpenHands'
conversation memory sends them: the `system` action is the system prompt (its `args.tools` the
tool schemas); user `message` actions are user turns; every action with `tool_call_metadata`
carries the raw model response (`model_response`, an OpenAI ChatCompletion), and all actions
of one response (`total_calls_in_response`) form one assistant message and one model call;
observations answer their call by `tool_call_metadata.tool_call_id`. Condensations
(`condensation` actions with `forgotten_event_ids` or a start/end range, `summary` and
`summary_offset`; `condense` observations) become recorded compactions, and every call's input
is the view OpenHands builds from the events before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats.fields import obj_or_empty
from ctxlab._ingest.formats.messages import MessageDecodeError, parse_arguments
from ctxlab._ingest.inputs import Inputs, Recorder
from ctxlab._trace import RecordedCompaction, Trace, Turn

if TYPE_CHECKING:
    from ctxlab._ingest.formats.registry import Values

NAME = "openhands"
DESCRIPTION = (
    "an OpenHands event stream (a list of events with 'source' and 'action' or 'observation') "
    "or evaluation / resolver output (JSONL lines with 'instance_id' or 'issue' and 'history')"
)

SKIPPED = frozenset(
    {"recall", "change_agent_state", "agent_state_changed", "null", "condensation_request"}
)
"""Event kinds OpenHands never shows the model (state changes, no-ops, memory look-ups)."""

ERROR_SUFFIX = "\n[Error occurred in processing last action]"
"""What OpenHands appends to an error it reports to the model as a user message."""


def _is_event(value: Any) -> bool:
    """A V0 event: `action` or `observation` naming its kind; a V1 event has a `kind`
    (`openhands_v1`)."""
    return (
        isinstance(value, dict)
        and "source" in value
        and ("action" in value or "observation" in value)
        and "kind" not in value
    )


def _is_instance(value: Any) -> bool:
    """An evaluation line (`instance_id`) or a resolver line (`issue`, no `instance_id`)."""
    if not (isinstance(value, dict) and ("instance_id" in value or "issue" in value)):
        return False
    history = value.get("history")
    return isinstance(history, list) and (not history or _is_event(history[0]))


def sniff(values: Values) -> bool:
    """An event list (a whole-file document) or instance lines with a `history` of events."""
    if not values:
        return False
    first, line = values[0]
    if line is None and isinstance(first, list):
        return bool(first) and all(_is_event(e) for e in first[:3])
    return _is_instance(first)


@dataclass
class _Where:
    """Where an event sits, for errors that name the file, line and event."""

    source: str
    line: int | None
    item: int = 0
    event_id: Any = None

    def error(self, what: str) -> TraceFormatError:
        at = f"event {self.event_id!r}" if self.event_id is not None else f"event #{self.item}"
        return TraceFormatError(f"{at}: {what}", source=self.source, line=self.line)


def _typename(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _obj(value: Any, name: str, where: _Where) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error(f"field '{name}' must be an object, got {_typename(value)}")
    return value


def _opt_obj(value: Any, name: str, where: _Where) -> dict[str, Any]:
    return {} if value is None else _obj(value, name, where)


def _text(value: Any, name: str, where: _Where) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise where.error(f"field '{name}' must be a string, got {_typename(value)}")
    return value


def _key_count(obj: dict[str, Any], key: str, prefix: str, where: _Where) -> int | None:
    return _count(obj.get(key), f"{prefix}.{key}", where)


def _count(value: Any, name: str, where: _Where) -> int | None:
    """A non-negative integer or None; anything else is a located error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise where.error(f"field '{name}' must be a non-negative integer, got {value!r}")
    return value


@dataclass
class _Usage:
    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None


def _usage(raw: Any, where: _Where) -> _Usage:
    """Per-call usage from a ChatCompletion `usage` (LiteLLM adds Anthropic's cache fields)."""
    usage = _opt_obj(raw, "model_response.usage", where)
    details = _opt_obj(usage.get("prompt_tokens_details"), "usage.prompt_tokens_details", where)
    read = _key_count(usage, "cache_read_input_tokens", "usage", where)
    if read is None:
        read = _key_count(details, "cached_tokens", "usage.prompt_tokens_details", where)
    return _Usage(
        input=_key_count(usage, "prompt_tokens", "usage", where),
        output=_key_count(usage, "completion_tokens", "usage", where),
        cache_read=read,
        cache_write=_key_count(usage, "cache_creation_input_tokens", "usage", where),
    )


def _metrics_usage(event: dict[str, Any], response_id: str, where: _Where) -> _Usage | None:
    """Usage of one response from the event's `llm_metrics.token_usages`, if listed there."""
    metrics = _opt_obj(event.get("llm_metrics"), "llm_metrics", where)
    usages = metrics.get("token_usages") or []
    if not isinstance(usages, list):
        raise where.error("field 'llm_metrics.token_usages' must be a list")
    for entry in usages:
        entry = _obj(entry, "llm_metrics.token_usages[]", where)
        if entry.get("response_id") == response_id:
            prefix = "llm_metrics.token_usages[]"
            return _Usage(
                input=_key_count(entry, "prompt_tokens", prefix, where),
                output=_key_count(entry, "completion_tokens", prefix, where),
                cache_read=_key_count(entry, "cache_read_tokens", prefix, where),
                cache_write=_key_count(entry, "cache_write_tokens", prefix, where),
            )
    return None


def _accumulated_prompt(event: dict[str, Any], where: _Where) -> int | None:
    metrics = _opt_obj(event.get("llm_metrics"), "llm_metrics", where)
    name = "llm_metrics.accumulated_token_usage"
    acc = _opt_obj(metrics.get("accumulated_token_usage"), name, where)
    return _key_count(acc, "prompt_tokens", name, where)


def _observation_text(event: dict[str, Any], where: _Where) -> str:
    """An observation as the model read it: a command's output gets the prefix, suffix,
    working directory and exit code OpenHands adds from `extras.metadata`."""
    content = _text(event.get("content"), "content", where)
    if event.get("observation") != "run":
        return content
    extras = _opt_obj(event.get("extras"), "extras", where)
    meta = _opt_obj(extras.get("metadata"), "extras.metadata", where)
    if not meta:
        return content
    text = _text(meta.get("prefix"), "extras.metadata.prefix", where) + content
    text += _text(meta.get("suffix"), "extras.metadata.suffix", where)
    if meta.get("working_dir"):
        text += f"\n[Current working directory: {meta['working_dir']}]"
    if meta.get("py_interpreter_path"):
        text += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
    exit_code = meta.get("exit_code")
    if isinstance(exit_code, int) and exit_code != -1:
        text += f"\n[Command finished with exit code {exit_code}]"
    return text


@dataclass
class _Call:
    """One model call being built: the event that carried it and what it recorded."""

    event_index: int
    position: int
    output: AIMessage
    model: str | None
    usage: _Usage | None
    started_at: str | None


@dataclass
class _Condensation:
    event_index: int
    forgotten: set[Any]
    summary: str | None
    offset: int | None
    started_at: str | None


@dataclass
class _Builder:
    """Walks the events once, building the full history and what each call saw."""

    where: _Where
    messages: list[BaseMessage] = field(default_factory=list)
    owner: list[int] = field(default_factory=list)
    """For each message, the index (in `events`) of the event it came from."""
    events: list[Any] = field(default_factory=list)
    """Ids of the events OpenHands keeps in its history, in order."""
    calls: list[_Call] = field(default_factory=list)
    condensations: list[_Condensation] = field(default_factory=list)
    summaries: list[tuple[int, str, str | None]] = field(default_factory=list)
    """`condense` observations: (event index, text, timestamp)."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    has_system: bool = False
    responses: dict[str, int] = field(default_factory=dict)
    call_ids: set[str] = field(default_factory=set)
    plain_actions: int = 0
    recalls: int = 0
    last_accumulated: int | None = None
    derived_usage: int = 0

    def add(self, message: BaseMessage) -> None:
        self.messages.append(message)
        self.owner.append(len(self.events) - 1)

    def event(self, event: Any, item: int) -> None:
        where = self.where
        where.item, where.event_id = item, None
        event = _obj(event, "event", where)
        where.event_id = event.get("id")
        action, observation = event.get("action"), event.get("observation")
        kind = action if action is not None else observation
        if not isinstance(kind, str):
            raise where.error(
                "field 'action' or 'observation' must be a string naming the event kind"
            )
        if kind in SKIPPED:
            self.recalls += observation == "recall"
            return
        timestamp = event.get("timestamp")
        stamp = timestamp if isinstance(timestamp, str) else None
        if action == "condensation":
            self.condensation(event, stamp)
            return
        self.events.append(where.event_id)
        if observation == "condense":
            self.summaries.append(
                (len(self.events) - 1, _text(event.get("content"), "content", where), stamp)
            )
            return
        meta = event.get("tool_call_metadata")
        if action is not None:
            self.action(event, action, meta, stamp)
        else:
            self.observation(event, observation, meta)

    def action(self, event: dict[str, Any], action: str, meta: Any, stamp: str | None) -> None:
        where = self.where
        args = _opt_obj(event.get("args"), "args", where)
        if action == "system":
            self.has_system = True
            tools = args.get("tools") or []
            if not isinstance(tools, list):
                raise where.error("field 'args.tools' must be a list of tool schemas")
            self.tools = tools
            self.add(SystemMessage(content=_text(args.get("content"), "args.content", where)))
            return
        if meta is not None:
            self.tool_action(event, _obj(meta, "tool_call_metadata", where), stamp)
            return
        if action == "message" and event.get("source") == "user":
            self.add(HumanMessage(content=_text(args.get("content"), "args.content", where)))
            return
        if event.get("source") != "agent":
            return
        if action == "message":
            text = _text(args.get("content"), "args.content", where)
        else:
            self.plain_actions += 1
            text = _text(event.get("message"), "message", where)
        self.call(event, _output(content=text), None, stamp)

    def tool_action(self, event: dict[str, Any], meta: dict[str, Any], stamp: str | None) -> None:
        where = self.where
        response = _obj(meta.get("model_response"), "tool_call_metadata.model_response", where)
        response_id = response.get("id")
        if not isinstance(response_id, str) or not response_id:
            raise where.error("field 'tool_call_metadata.model_response.id' must be a string")
        if response_id in self.responses:
            return  # a further call of a response already read
        choices = response.get("choices")
        if not isinstance(choices, list) or not choices:
            raise where.error("field 'model_response.choices' must be a non-empty list")
        choice = _obj(choices[0], "model_response.choices[0]", where)
        raw = _obj(choice.get("message"), "model_response.choices[0].message", where)
        usage = _usage(response.get("usage"), where) if response.get("usage") is not None else None
        if usage is None or usage.input is None:
            usage = _metrics_usage(event, response_id, where) or usage
        model = response.get("model") if isinstance(response.get("model"), str) else None
        content = raw.get("content")
        if content is not None and not isinstance(content, str | list):
            raise where.error("field 'model_response.choices[0].message.content' must be text")
        extra = raw.get("reasoning_content")
        output = _output(
            content=content or "",
            tool_calls=_tool_calls(raw.get("tool_calls"), where),
            id=response_id,
            response_metadata={"model_name": model, "finish_reason": choice.get("finish_reason")},
            additional_kwargs={"reasoning_content": extra}
            if isinstance(extra, str) and extra
            else {},
        )
        self.responses[response_id] = len(self.calls)
        self.call_ids.update(str(c["id"]) for c in output["tool_calls"] if c.get("id"))
        self.call(event, output, usage, stamp, model)

    def call(
        self,
        event: dict[str, Any],
        fields: dict[str, Any],
        usage: _Usage | None,
        stamp: str | None,
        model: str | None = None,
    ) -> None:
        """A model call: its output joins the history; usage falls back to the difference of
        the accumulated prompt tokens when the response carried none."""
        accumulated = _accumulated_prompt(event, self.where)
        previous = self.last_accumulated or 0
        if (usage is None or usage.input is None) and (accumulated or 0) > previous:
            usage = _Usage(input=(accumulated or 0) - previous)
            self.derived_usage += 1
        if accumulated is not None:
            self.last_accumulated = accumulated
        if usage is not None and usage.input is not None:
            fields["usage_metadata"] = _usage_metadata(usage)
        output = AIMessage(**fields)
        self.calls.append(
            _Call(len(self.events) - 1, len(self.messages), output, model, usage, stamp)
        )
        self.add(output)

    def observation(self, event: dict[str, Any], observation: Any, meta: Any) -> None:
        where = self.where
        if meta is not None:
            meta = _obj(meta, "tool_call_metadata", where)
            call_id = meta.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise where.error("field 'tool_call_metadata.tool_call_id' must be a string")
            if call_id not in self.call_ids:
                raise where.error(
                    f"observation answers tool call {call_id!r}, which no earlier action made"
                )
            name = meta.get("function_name")
            self.add(
                ToolMessage(
                    content=_observation_text(event, where),
                    tool_call_id=call_id,
                    name=name if isinstance(name, str) else None,
                    status="error" if observation == "error" else "success",
                )
            )
            return
        text = _text(event.get("content"), "content", where)
        if observation == "error":
            self.add(HumanMessage(content=text + ERROR_SUFFIX))
        elif event.get("cause") is not None and event.get("source") != "user":
            self.add(HumanMessage(content=_observation_text(event, where)))

    def condensation(self, event: dict[str, Any], stamp: str | None) -> None:
        where = self.where
        args = _opt_obj(event.get("args"), "args", where)
        ids = args.get("forgotten_event_ids")
        forgotten: set[Any] = set()
        if ids is not None:
            if not isinstance(ids, list) or not all(
                isinstance(i, int | str) and not isinstance(i, bool) for i in ids
            ):
                raise where.error("field 'args.forgotten_event_ids' must be a list of event ids")
            forgotten.update(ids)
        start = _key_count(args, "forgotten_events_start_id", "args", where)
        end = _key_count(args, "forgotten_events_end_id", "args", where)
        if start is not None and end is not None:
            forgotten.update(range(start, end + 1))
        summary = args.get("summary")
        self.condensations.append(
            _Condensation(
                event_index=len(self.events),
                forgotten=forgotten,
                summary=_text(summary, "args.summary", where) if summary is not None else None,
                offset=_count(args.get("summary_offset"), "args.summary_offset", where),
                started_at=stamp,
            )
        )


def _output(**fields: Any) -> dict[str, Any]:
    """The fields of an assistant message, built once its usage is known."""
    return {"tool_calls": [], **fields}


def _tool_calls(raw: Any, where: _Where) -> list[dict[str, Any]]:
    """OpenAI-form tool calls of a response as LangChain tool calls; arguments are JSON
    strings (parsed with orjson, the Python-literal fallback only when that fails)."""
    if raw is None:
        return []
    name = "model_response.choices[0].message.tool_calls"
    if not isinstance(raw, list):
        raise where.error(f"field '{name}' must be a list, got {_typename(raw)}")
    calls = []
    for call in raw:
        call = _obj(call, f"{name}[]", where)
        function = _obj(call.get("function"), f"{name}[].function", where)
        arguments = function.get("arguments")
        try:
            args = orjson.loads(arguments) if isinstance(arguments, str) and arguments else None
        except orjson.JSONDecodeError:
            args = None
        if not isinstance(args, dict):
            try:
                args = parse_arguments(arguments)
            except MessageDecodeError as exc:
                raise where.error(f"field '{name}[].function.arguments': {exc}") from exc
        calls.append(
            {"name": _text(function.get("name"), f"{name}[].function.name", where), "args": args,
             "id": _text(call.get("id"), f"{name}[].id", where) or None, "type": "tool_call"}
        )  # fmt: skip
    return calls


def _usage_metadata(usage: _Usage) -> dict[str, Any]:
    """Usage as LangChain `usage_metadata`, as a LangChain chat model would record it."""
    details: dict[str, int] = {}
    if usage.cache_read is not None:
        details["cache_read"] = usage.cache_read
    if usage.cache_write is not None:
        details["cache_creation"] = usage.cache_write
    metadata: dict[str, Any] = {
        "input_tokens": usage.input or 0,
        "output_tokens": usage.output or 0,
        "total_tokens": (usage.input or 0) + (usage.output or 0),
    }
    if details:
        metadata["input_token_details"] = details
    return metadata


def _view(builder: _Builder, before: int) -> tuple[tuple[BaseMessage, ...], list[BaseMessage]]:
    """What the model received at a call made after the first `before` history events:
    OpenHands' view (forgotten events dropped, the latest summary at its offset), with tool
    results whose call was forgotten filtered out; and the summary messages inserted."""
    forgotten: set[Any] = set()
    summary: tuple[str, int] | None = None
    for cond in builder.condensations:
        if cond.event_index <= before:
            forgotten |= cond.forgotten
            if cond.summary is not None and cond.offset is not None:
                summary = (cond.summary, cond.offset)
    summary_at = {index: text for index, text, _ in builder.summaries if index < before}
    kept = [i for i in range(before) if builder.events[i] not in forgotten]
    by_event: dict[int, list[BaseMessage]] = {}
    for message, owner in zip(builder.messages, builder.owner, strict=True):
        if owner < before:
            by_event.setdefault(owner, []).append(message)
    inserted: list[BaseMessage] = []
    out: list[BaseMessage] = []
    for slot, index in enumerate(kept):
        if summary is not None and slot == summary[1]:
            inserted.append(HumanMessage(content=summary[0]))
            out.append(inserted[-1])
        if index in summary_at:
            inserted.append(HumanMessage(content=summary_at[index]))
            out.append(inserted[-1])
        out.extend(by_event.get(index, ()))
    if summary is not None and summary[1] >= len(kept):
        inserted.append(HumanMessage(content=summary[0]))
        out.append(inserted[-1])
    calls = {c.get("id") for m in out if isinstance(m, AIMessage) for c in m.tool_calls}
    view = tuple(m for m in out if not (isinstance(m, ToolMessage) and m.tool_call_id not in calls))
    return view, inserted


def _turns(builder: _Builder) -> tuple[list[Turn], list[RecordedCompaction], list[BaseMessage]]:
    marks = sorted(
        [(c.event_index, c.summary, c.started_at) for c in builder.condensations]
        + [(i + 1, text, stamp) for i, text, stamp in builder.summaries]
    )
    condensed = bool(marks)
    turns: list[Turn] = []
    compactions: list[RecordedCompaction] = []
    inserted: list[BaseMessage] = []
    seen: set[int] = set()
    mark = 0
    recorder = Recorder()
    for index, call in enumerate(builder.calls):
        before = call.event_index
        if condensed:
            view, extra = _view(builder, before)
            inputs = recorder.snapshot(view)
            for message in extra:
                if id(message) not in seen:
                    seen.add(id(message))
                    inserted.append(message)
        else:
            inputs = Inputs.prefix(builder.messages, call.position)
        compacted = False
        while mark < len(marks) and marks[mark][0] <= before:
            _, summary, stamp = marks[mark]
            previous = turns[-1].input_tokens if turns else None
            usage = call.usage
            compactions.append(
                RecordedCompaction(
                    turn=index,
                    kind="condensation",
                    trigger="auto",
                    pre_tokens=previous,
                    post_tokens=usage.input if usage else None,
                    summary=summary,
                    started_at=stamp,
                )
            )
            compacted = True
            mark += 1
        usage = call.usage or _Usage()
        turns.append(
            Turn(
                index=index,
                position=call.position,
                inputs=inputs,
                output=call.output,
                model=call.model,
                run_id=call.output.id,
                input_tokens=usage.input,
                output_tokens=usage.output,
                cache_read_tokens=usage.cache_read,
                cache_write_tokens=usage.cache_write,
                compacted=compacted,
                started_at=call.started_at,
            )
        )
    return turns, compactions, inserted


def _notes(builder: _Builder, condensed: bool) -> list[str]:
    notes = [
        "OpenHands does not record each call's input: it is rebuilt from the events before the "
        "call" + (", with the recorded condensations applied." if condensed else ".")
    ]
    if builder.recalls:
        notes.append(
            "Recall observations (workspace context, microagent knowledge) are left out: "
            "OpenHands sends them only when prompt extensions are on, which the file does not say."
        )
    if not builder.has_system:
        notes.append(
            "The system prompt is not in the file (no 'system' action); it counts as zero tokens."
        )
    if not builder.tools:
        notes.append("Tool schemas are not in the file; they count as zero tokens.")
    if builder.derived_usage:
        notes.append(
            f"{builder.derived_usage} of {len(builder.calls)} model calls carry no per-call usage; "
            "their input tokens are the difference of llm_metrics.accumulated_token_usage "
            "between calls."
        )
    missing = sum(1 for c in builder.calls if c.usage is None or c.usage.input is None)
    if missing:
        notes.append(f"{missing} of {len(builder.calls)} model calls have no recorded usage.")
    if builder.plain_actions:
        notes.append(
            "Actions without tool_call_metadata (no native tool calling) are read as assistant "
            "text from their 'message', and their observations as user messages."
        )
    return notes


def _build(history: list[Any], where: _Where, trace_id: str) -> tuple[Trace, _Builder]:
    builder = _Builder(where=where)
    for item, event in enumerate(history):
        builder.event(event, item)
    turns, compactions, inserted = _turns(builder)
    condensed = bool(builder.condensations or builder.summaries)
    models = [t.model for t in turns if t.model]
    trace = Trace(
        trace_id=trace_id,
        format=NAME,
        source=where.source,
        messages=builder.messages,
        turns=turns,
        tools=builder.tools,
        model=max(set(models), key=models.count) if models else None,
        inserted=inserted,
        compactions=compactions,
        notes=_notes(builder, condensed),
    )
    return trace, builder


def _instance(value: Any, where: _Where, stem: str) -> Trace:
    if not isinstance(value, dict):
        raise TraceFormatError(
            f"expected an OpenHands instance object, got {_typename(value)}",
            source=where.source,
            line=where.line,
        )
    history = value.get("history")
    if not isinstance(history, list):
        raise TraceFormatError(
            f"field 'history' must be a list of events, got {_typename(history)}",
            source=where.source,
            line=where.line,
        )
    instance_id = value.get("instance_id")
    issue = obj_or_empty(value, "issue")
    if instance_id is None and issue.get("repo") and issue.get("number") is not None:
        instance_id = f"{issue.get('owner')}/{issue['repo']}#{issue['number']}"  # resolver
    trace_id = str(instance_id) if instance_id is not None else f"{stem}:{where.line}"
    trace, builder = _build(history, where, trace_id)
    metadata = obj_or_empty(value, "metadata")
    llm = obj_or_empty(metadata, "llm_config")
    trace.metadata = {
        "instance_id": instance_id,
        "agent_class": metadata.get("agent_class"),
        "llm_model": llm.get("model"),
        "max_iterations": metadata.get("max_iterations"),
        "condenser_config": metadata.get("condenser_config"),
        "error": value.get("error"),
    }
    metrics = obj_or_empty(value, "metrics")
    latencies = metrics.get("response_latencies")
    if isinstance(latencies, list) and len(latencies) > len(trace.turns):
        lost = len(latencies) - len(trace.turns)
        trace.notes.append(
            f"metrics.response_latencies lists {lost} more model responses than the history "
            "holds: rejected before they became actions, they are not turns."
        )
    return trace


def read(values: Values, source: str) -> list[Trace]:
    """One trace per instance line, or one for a bare event list."""
    stem = Path(source).name.split(".")[0]
    first, line = values[0]
    if line is None and isinstance(first, list):
        trace, _ = _build(first, _Where(source, None), stem)
        return [trace]
    return [_instance(value, _Where(source, number), stem) for value, number in values]
