"""any-agent's spans (mozilla-ai/any-agent `AgentTrace`): the calls it records without inputs.

any-agent instruments every framework it wraps (OpenAI Agents, LangChain, LlamaIndex, Google
ADK, smolagents, Agno, TinyAgent) with the GenAI conventions in its own dialect: a model call is
`gen_ai.operation.name = "call_llm"`, only the first call records `gen_ai.input.messages`, each
call's answer is `gen_ai.output` (text, or with `gen_ai.output.type = "json"` a list of
`{"tool.name", "tool.args"}` tool calls, older releases OpenAI `{"function", "id"}` dicts), and
each tool run is an `execute_tool` span (`gen_ai.tool.name`, `gen_ai.tool.args`, its result in
`gen_ai.output`, `gen_ai.tool.call.id` where the framework has one). `complete` rebuilds what
every call saw: the previous call's input, its answer, the results of the tools it asked for.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab._ingest.formats.otel_spans import SpanError
from ctxlab._ingest.formats.redaction import arguments_or_text

if TYPE_CHECKING:
    from ctxlab._ingest.formats.otel_messages import Call
    from ctxlab._ingest.formats.otel_spans import Span

CALL = "call_llm"
"""any-agent's `gen_ai.operation.name` of a model call."""
TOOL = "execute_tool"
"""... and of a tool run."""


NOTE = (
    "Written by any-agent: only the first model call records its input messages; every later "
    "call's input is rebuilt from the previous input, its answer (gen_ai.output) and the "
    "results of the execute_tool spans that ran before the next call."
)


def is_any_agent(spans: list[Span]) -> bool:
    """Whether `spans` were written by any-agent (a `call_llm` span among them)."""
    return any(s.attributes.get("gen_ai.operation.name") == CALL for s in spans)


def _loads(text: str, span: Span, key: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise SpanError(f"span {span.span_id}: '{key}' is not JSON: {text[:80]!r}") from None


def _tool_call(raw: Any, index: int, span: Span) -> dict[str, Any] | None:
    """One tool call of a JSON `gen_ai.output`, or None when the item is not one."""
    if not isinstance(raw, dict):
        return None
    if "tool.name" in raw:
        name, args, call_id = raw["tool.name"], raw.get("tool.args"), raw.get("tool.id")
    elif isinstance(raw.get("function"), dict):
        name, args, call_id = raw["function"].get("name"), raw["function"].get("arguments"), None
        call_id = raw.get("id")
    else:
        return None
    if not isinstance(name, str):
        return None
    parsed = args if isinstance(args, dict) else arguments_or_text(args)[0]
    ident = call_id if isinstance(call_id, str) and call_id else f"call_{span.span_id}_{index}"
    return {"name": name, "args": parsed, "id": ident, "type": "tool_call"}


def output_of(span: Span) -> AIMessage | None:
    """The answer a `call_llm` span records: text, or tool calls (JSON that is not a list of
    tool calls, a structured answer, is kept as its text)."""
    text = span.attributes.get("gen_ai.output")
    if not isinstance(text, str):
        return None
    if span.attributes.get("gen_ai.output.type") == "json":
        value = _loads(text, span, "gen_ai.output")
        items = value if isinstance(value, list) else None
        calls = [_tool_call(item, k, span) for k, item in enumerate(items or [])]
        if items and all(c is not None for c in calls):
            return AIMessage(content="", tool_calls=calls)
    return AIMessage(content=text)


def _results(tools: list[Span], asked: AIMessage | None) -> list[BaseMessage]:
    """Tool messages for the `execute_tool` spans run after one call, each answering the
    first call of its name still open (its own `gen_ai.tool.call.id` when it has one)."""
    open_calls = list(asked.tool_calls) if asked is not None else []
    out: list[BaseMessage] = []
    for span in tools:
        attrs = span.attributes
        name = attrs.get("gen_ai.tool.name")
        own = attrs.get("gen_ai.tool.call.id")
        match = next((c for c in open_calls if c["id"] == own), None) or next(
            (c for c in open_calls if c["name"] == name), None
        )
        if match is None:
            continue  # a tool no recorded call asked for (a framework's internal step)
        open_calls.remove(match)
        result = attrs.get("gen_ai.output")
        content = result if isinstance(result, str) else json.dumps(result)
        out.append(ToolMessage(content=content, tool_call_id=match["id"], name=match["name"]))
    return out


def complete(calls: list[Call], spans: list[Span]) -> list[Call]:
    """`calls` (in start order) with their answers read from `gen_ai.output` and the inputs
    any-agent did not record rebuilt; tool runs are placed by start time."""
    tools = sorted(
        (s for s in spans if s.attributes.get("gen_ai.operation.name") == TOOL),
        key=lambda s: (s.start is None, s.start or 0, s.order),
    )
    context: list[BaseMessage] | None = None
    for k, call in enumerate(calls):
        if call.output is None:
            call.output = output_of(call.span)
        if call.inputs is None and context is not None:
            call.inputs = list(context)
        if call.inputs is None:
            continue
        start = call.span.start or 0
        end = calls[k + 1].span.start if k + 1 < len(calls) else None
        ran = [
            s for s in tools if (s.start or 0) >= start and (end is None or (s.start or 0) < end)
        ]
        answer = [call.output] if call.output is not None else []
        context = [*call.inputs, *answer, *_results(ran, call.output)]
    return calls


__all__ = ["CALL", "NOTE", "TOOL", "complete", "is_any_agent", "output_of"]
