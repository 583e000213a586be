"""OpenTelemetry GenAI spans (and OpenInference, Vercel AI SDK) to canonical `Trace`s.

The spans of one trace (`traceId`) become one conversation. Its model-call spans, ordered by
start time, are its turns; each records the exact input of its call, so the full history is
rebuilt by chaining the calls as the LangSmith reader does: a call whose input extends the
previous input and output adds the new tail; one that does not is a recorded compaction point,
and only messages never seen before are added. Agent, tool and workflow spans carry no call of
their own and are skipped. Containers: `otel_spans`; conventions: `otel_messages`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats.langsmith import fingerprint, looks_like_summary
from ctxlab._ingest.formats.otel_any_agent import NOTE as ANY_AGENT_NOTE
from ctxlab._ingest.formats.otel_any_agent import complete, is_any_agent
from ctxlab._ingest.formats.otel_messages import Call, Memo, is_model_call, lacks_ids, read_call
from ctxlab._ingest.formats.otel_spans import (
    Span,
    SpanError,
    looks_like_attribute_map,
    looks_like_span,
    otlp_batches,
    span_list,
    spans_of,
)
from ctxlab._ingest.inputs import Inputs, Recorder
from ctxlab._messages import first_orphan_result
from ctxlab._trace import Trace, Turn

NAME = "otel"
DESCRIPTION = (
    "OpenTelemetry GenAI / OpenInference / Vercel AI SDK spans (OTLP JSON with "
    "'resourceSpans', span lists, or a map of 'gen_ai.*' / 'llm.*' / 'ai.*' attributes)"
)


def _claims(value: Any) -> bool:
    if otlp_batches(value) is not None:
        return True
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        value = value["data"]
    if span_list(value) is not None:
        return True
    if isinstance(value, list):
        if not value:
            return False
        value = value[0]
        if otlp_batches(value) is not None:
            return True
    return looks_like_span(value) or looks_like_attribute_map(value)


def sniff(values: list[tuple[Any, int | None]]) -> bool:
    """OTLP batches, span objects or GenAI attribute maps (first value decides)."""
    return bool(values) and _claims(values[0][0])


def _chain(calls: list[Call]) -> tuple[list[BaseMessage], list[Turn], list[BaseMessage]]:
    """Full history, turns and inserted summaries from one conversation's calls in order."""
    history: list[BaseMessage] = []
    seen: set[str] = set()
    inserted: list[BaseMessage] = []
    turns: list[Turn] = []
    prev_sent: list[str] | None = None
    prev_context: list[BaseMessage] = []
    prints: dict[int, str] = {}
    recorder = Recorder()

    def fp(msg: BaseMessage) -> str:
        key = id(msg)
        if key not in prints:
            prints[key] = fingerprint(msg)
        return prints[key]

    def add(msg: BaseMessage) -> None:
        history.append(msg)
        seen.add(fp(msg))

    for call in calls:
        inputs = call.inputs
        if inputs is None:  # not recorded: the previous call's context plus its answer
            inputs = prev_context
        lead = 0
        while lead < len(inputs) and isinstance(inputs[lead], SystemMessage):
            lead += 1
        body = inputs[lead:]
        sent = [fp(m) for m in body]
        compacted = False
        if prev_sent is None:
            for msg in inputs:
                add(msg)
        elif sent[: len(prev_sent)] == prev_sent:
            for msg in body[len(prev_sent) :]:
                (inserted.append if looks_like_summary(msg) else add)(msg)
        else:
            compacted = True
            for msg, printed in zip(body, sent, strict=True):
                if printed not in seen:
                    (inserted.append if looks_like_summary(msg) else add)(msg)
        position = len(history)
        if call.output is not None:
            add(call.output)
        turns.append(_turn(call, len(turns), position, recorder.snapshot(inputs), compacted))
        prev_sent = sent + ([fp(call.output)] if call.output is not None else [])
        prev_context = [*inputs, call.output] if call.output is not None else list(inputs)
    return history, turns, inserted


def _fill_call_ids(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Ids for tool calls recorded without one (Gemini has none): `call_<message>_<k>`, the
    same in every call that repeats the message; a tool result without an id answers the
    oldest unanswered call before it, so call/result pairs survive."""
    out: list[BaseMessage] = []
    pending: list[str] = []
    for index, msg in enumerate(messages):
        if isinstance(msg, AIMessage) and msg.tool_calls:
            if lacks_ids(msg):
                calls = [
                    {**c, "id": c.get("id") or f"call_{index}_{k}"}
                    for k, c in enumerate(msg.tool_calls)
                ]
                msg = msg.model_copy(update={"tool_calls": calls})
            pending = [str(c["id"]) for c in msg.tool_calls]
        elif isinstance(msg, ToolMessage):
            if not msg.tool_call_id and pending:
                msg = msg.model_copy(update={"tool_call_id": pending[0]})
            if msg.tool_call_id in pending:
                pending.remove(msg.tool_call_id)
        out.append(msg)
    return out


def _with_call_ids(call: Call, memo: Memo) -> Call:
    """The call with ids filled in where its messages lack them (rare: one set check)."""
    if call.inputs is not None and not memo.missing_ids.isdisjoint(map(id, call.inputs)):
        call.inputs = _fill_call_ids(call.inputs)
    if call.output is not None and lacks_ids(call.output):
        filled = _fill_call_ids([*(call.inputs or []), call.output])[-1]
        call.output = filled if isinstance(filled, AIMessage) else call.output
    return call


def _turn(call: Call, index: int, position: int, inputs: Inputs, compacted: bool) -> Turn:
    return Turn(
        index=index,
        position=position,
        inputs=inputs,
        output=call.output,
        model=call.model,
        provider=call.provider,
        run_id=call.span.span_id,
        name=call.span.name or None,
        input_tokens=call.input_tokens,
        output_tokens=call.output_tokens,
        cache_read_tokens=call.cache_read_tokens,
        cache_write_tokens=call.cache_write_tokens,
        max_output_tokens=call.max_output_tokens,
        compacted=compacted,
        started_at=call.span.started_at,
    )


def _check_pairs(history: list[BaseMessage], source: str, trace_id: str) -> None:
    orphan = first_orphan_result(history)
    if orphan is not None:
        raise TraceFormatError(
            f"trace {trace_id}: tool result for call {orphan[1].tool_call_id!r} has no "
            "matching tool call in an earlier assistant message",
            source=source,
        )


def _innermost(spans: list[Span]) -> tuple[list[Span], int]:
    """Model-call spans without a model-call descendant (one call instrumented twice, e.g. a
    LangChain span around the provider SDK's span, is counted once), and how many were dropped."""
    calls = [s for s in spans if is_model_call(s)]
    ids = {s.span_id for s in calls}
    by_id = {s.span_id: s for s in spans}
    outer: set[str] = set()
    for span in calls:
        parent, hops = span.parent_id, 0
        while parent is not None and parent in by_id and hops < len(spans):
            if parent in ids:
                outer.add(parent)
            parent, hops = by_id[parent].parent_id, hops + 1
    return [s for s in calls if s.span_id not in outer], len(outer)


def _notes(
    calls: list[Call], history: list[BaseMessage], tools: list[Any], dropped: int
) -> list[str]:
    notes = []
    missing = sum(1 for c in calls if c.inputs is None)
    if missing:
        notes.append(
            f"{missing} of {len(calls)} model-call spans record no input messages (content "
            "capture is opt-in); their input was rebuilt from the previous call's input and "
            "output."
        )
    if not any(isinstance(m, SystemMessage) for m in history):
        notes.append("No system prompt is recorded in the spans; it is counted as zero.")
    if not tools:
        notes.append(
            "No tool schemas are recorded (gen_ai.tool.definitions, llm.tools, ai.prompt.tools); "
            "they are counted as zero."
        )
    if all(c.input_tokens is None for c in calls):
        notes.append("No token usage is recorded on the model-call spans.")
    if any(c.output is None for c in calls):
        notes.append("Some model-call spans record no output message.")
    if dropped:
        notes.append(
            f"{dropped} model-call spans wrapping another model-call span (one call "
            "instrumented twice) were read as their inner span."
        )
    return notes


def _trace(trace_id: str, spans: list[Span], source: str, memo: Memo) -> Trace | None:
    model_spans, dropped = _innermost(spans)
    if not model_spans:
        return None
    model_spans.sort(key=lambda s: (s.start is None, s.start or 0, s.order))
    calls = []
    for span in model_spans:
        try:
            calls.append(_with_call_ids(read_call(span, memo), memo))
        except SpanError as exc:
            raise TraceFormatError(str(exc), source=source, line=span.line) from exc
    if is_any_agent(spans):
        try:
            calls = complete(calls, spans)
        except SpanError as exc:
            raise TraceFormatError(str(exc), source=source) from exc
    if all(c.inputs is None and c.output is None for c in calls):
        raise TraceFormatError(
            f"trace {trace_id}: no model-call span records its messages (message content "
            "capture is opt-in, e.g. OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)",
            source=source,
        )
    history, turns, inserted = _chain(calls)
    _check_pairs(history, source, trace_id)
    tools = next((c.tools for c in calls if c.tools), [])
    conventions = sorted({c.convention for c in calls if c.convention})
    return Trace(
        trace_id=trace_id,
        format=NAME,
        source=source,
        messages=history,
        turns=turns,
        tools=tools,
        model=next((t.model for t in turns if t.model), None),
        provider=next((t.provider for t in turns if t.provider), None),
        inserted=inserted,
        metadata={"conventions": conventions, "spans": len(spans), "root_span_id": _root(spans)},
        notes=[
            *([ANY_AGENT_NOTE] if is_any_agent(spans) else []),
            *_notes(calls, history, tools, dropped),
        ],
    )


def _root(spans: list[Span]) -> str | None:
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id is None or s.parent_id not in ids]
    roots.sort(key=lambda s: (s.start is None, s.start or 0, s.order))
    return roots[0].span_id if roots else None


def read(values: list[tuple[Any, int | None]], source: str) -> list[Trace]:
    """One trace per `traceId` that holds at least one model call, in order of first span."""
    stem = Path(source).name.split(".")[0]
    spans = spans_of(values, source, stem)
    groups: dict[str, list[Span]] = {}
    for span in spans:
        groups.setdefault(span.trace_id, []).append(span)
    memo = Memo()
    traces = [t for tid, members in groups.items() if (t := _trace(tid, members, source, memo))]
    if not traces:
        raise TraceFormatError(
            f"no model-call spans among {len(spans)} spans (expected spans with "
            "gen_ai.operation.name 'chat', openinference.span.kind 'LLM', or an AI SDK "
            "'.doGenerate' / '.doStream' span)",
            source=source,
        )
    return traces
