"""OpenTelemetry GenAI, OpenInference and Vercel AI SDK spans load as canonical traces.

The three real attribute fixtures (written by the OpenInference maintainers) are checked with
exact counts; synthetic files in tmp_path cover what they lack: several spans per trace, two
traces in one file, per-message span events, indexed `gen_ai.prompt.N`, the Vercel AI SDK's
span dump, nested Phoenix attributes, a recorded compaction, and bad files.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab._errors import TraceFormatError
from ctxlab.policies import get

FIXTURES = "real-traces/otel-genai-openinference-attr-fixtures"
REAL = {
    # SOURCE.txt: 1 LLM call with a 3-message history (user, assistant with a get_weather tool
    # call, its tool result) and one answer; usage 97 in / 52 out; gpt-4 served as gpt-4-0613.
    "otel_genai_client_span_tool_calls.json.gz": "gen_ai.input.messages",
    "otel_genai_deprecated_client_span_tool_calls.json.gz": "gen_ai.prompt",
    "openinference_client_span_tool_calls.json.gz": "openinference",
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_fixture_exact_counts(shared: Path, name: str) -> None:
    (trace,) = ctxlab.load(shared / "data" / FIXTURES / name)
    assert trace.format == "otel"
    assert trace.metadata["conventions"] == [REAL[name]]
    assert [m.type for m in trace.messages] == ["human", "ai", "tool", "ai"]
    assert len(trace.turns) == 1 and trace.subagents == []
    assert trace.recorded_compactions == [] and trace.compactions == []
    (turn,) = trace.turns
    assert turn.position == 3 and len(turn.inputs) == 3
    assert (turn.input_tokens, turn.output_tokens, turn.cache_read_tokens) == (97, 52, None)
    assert (turn.model, turn.provider, turn.max_output_tokens) == ("gpt-4-0613", "openai", 200)
    assert trace.messages[1].tool_calls == [
        {"name": "get_weather", "args": {"location": "Paris"}, "id": "1234", "type": "tool_call"}
    ]
    assert trace.messages[2].tool_call_id == "1234" and trace.messages[2].content == "rainy, 57°F"
    assert trace.messages[3].content.startswith("The weather in Paris is currently rainy")
    assert trace.tools == []
    assert len(trace.notes) == 2  # no system prompt, no tool schemas
    replay = ctxlab.replay(trace, get("deepagents"))
    assert replay.turns["recorded_input_tokens"].to_list() == [97]


# ----------------------------------------------------------------------------- OTLP builders


def any_value(value: Any) -> dict[str, Any]:
    """An OTLP `AnyValue` (integers as strings, as the OTLP JSON mapping writes them)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": key_values(value)}}
    return {"stringValue": value}


def key_values(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in attrs.items()]


def otlp_span(
    trace: str,
    span: str,
    start: int,
    attrs: dict[str, Any],
    *,
    name: str = "chat gpt-4o",
    parent: str = "",
    events: tuple[tuple[str, dict[str, Any]], ...] = (),
) -> dict[str, Any]:
    return {
        "traceId": trace,
        "spanId": span,
        "parentSpanId": parent,
        "name": name,
        "kind": 3,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 1),
        "attributes": key_values(attrs),
        "events": [
            {"timeUnixNano": str(start), "name": n, "attributes": key_values(a)} for n, a in events
        ],
        "status": {},
    }


def otlp(spans: list[dict[str, Any]]) -> dict[str, Any]:
    resource = {"attributes": key_values({"service.name": "agent"})}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}


def parts(role: str, *items: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(items)}


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


SYSTEM = json.dumps([text("You are terse.")])
USER = parts("user", text("Count files"))
CALL = parts("assistant", {"type": "tool_call", "id": "c1", "name": "ls", "arguments": {"p": "."}})
RESULT = parts("tool", {"type": "tool_call_response", "id": "c1", "response": "a.py b.py"})
TRACE_A, TRACE_B = "a" * 32, "b" * 32


def chat(inputs: list[Any], output: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "gen_ai.system_instructions": SYSTEM,
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(output),
        **extra,
    }


def two_traces() -> dict[str, Any]:
    """Trace A: an agent span, three chat spans (the third after a compaction) and a tool span,
    listed out of order; trace B: one OpenLLMetry call with indexed attributes."""
    tools = json.dumps([{"type": "function", "name": "ls", "parameters": {"type": "object"}}])
    summary = parts("user", text("Here is a summary of the conversation to date: two files"))
    spans = [
        otlp_span(
            TRACE_A,
            "c3",
            4000,
            chat(
                [summary, parts("user", text("Now count lines"))],
                [parts("assistant", text("Lines: 3"))],
                **{"gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 4},
            ),
            parent="ag",
        ),
        otlp_span(
            TRACE_A,
            "ag",
            1000,
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": json.dumps([USER])},
            name="invoke_agent counter",
        ),
        otlp_span(
            TRACE_A,
            "c1",
            2000,
            chat(
                [USER],
                [CALL],
                **{
                    "gen_ai.tool.definitions": tools,
                    "gen_ai.usage.input_tokens": 100,
                    "gen_ai.usage.output_tokens": 10,
                    "gen_ai.request.max_tokens": 512,
                },
            ),
            parent="ag",
        ),
        otlp_span(
            TRACE_A,
            "tl",
            2500,
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ls"},
            name="execute_tool ls",
            parent="ag",
        ),
        otlp_span(
            TRACE_A,
            "c2",
            3000,
            chat(
                [USER, CALL, RESULT],
                [parts("assistant", text("Two files."))],
                **{
                    "gen_ai.usage.input_tokens": 130,
                    "gen_ai.usage.output_tokens": 5,
                    "gen_ai.usage.cache_read.input_tokens": 80,
                },
            ),
            parent="ag",
        ),
        otlp_span(
            TRACE_B,
            "b1",
            5000,
            {
                "gen_ai.system": "anthropic",
                "gen_ai.request.model": "claude-x",
                "llm.request.type": "chat",
                "gen_ai.prompt.0.role": "system",
                "gen_ai.prompt.0.content": "Be brief",
                "gen_ai.prompt.1.role": "user",
                "gen_ai.prompt.1.content": "Weather?",
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.finish_reason": "tool_calls",
                "gen_ai.completion.0.tool_calls.0.id": "t1",
                "gen_ai.completion.0.tool_calls.0.name": "weather",
                "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Paris"}',
                "gen_ai.usage.prompt_tokens": 20,
                "gen_ai.usage.completion_tokens": 7,
                "gen_ai.usage.cache_read_input_tokens": 12,
                "llm.request.functions.0.name": "weather",
                "llm.request.functions.0.description": "Weather by city",
            },
        ),
    ]
    return otlp(spans)


def test_otlp_file_with_two_traces_and_a_compaction(tmp_path: Path) -> None:
    path = tmp_path / "export.json.gz"
    path.write_bytes(gzip.compress(json.dumps(two_traces()).encode()))
    a, b = ctxlab.load(path)
    assert (a.trace_id, b.trace_id) == (TRACE_A, TRACE_B)
    assert [type(m) for m in a.messages] == [
        SystemMessage, HumanMessage, AIMessage, ToolMessage, AIMessage, HumanMessage, AIMessage
    ]  # fmt: skip
    assert [t.run_id for t in a.turns] == ["c1", "c2", "c3"]  # by start time, agent/tool skipped
    assert [t.position for t in a.turns] == [2, 4, 6]
    assert [t.compacted for t in a.turns] == [False, False, True]
    assert a.recorded_compactions == [2] and len(a.inserted) == 1
    assert a.recorded_input_tokens == 270
    assert [t.cache_read_tokens for t in a.turns] == [None, 80, None]
    assert a.turns[0].max_output_tokens == 512
    assert a.turns[0].started_at == "1970-01-01T00:00:00.000002Z"
    assert (a.model, a.provider) == ("gpt-4o-2024-08-06", "openai")
    assert [t["name"] for t in a.tools] == ["ls"]
    assert a.messages[0].content == "You are terse."
    assert a.turns[2].inputs[0].text.startswith("You are terse.")
    assert a.notes == []
    assert a.metadata["root_span_id"] == "ag"

    assert [m.type for m in b.messages] == ["system", "human", "ai"]
    assert b.messages[2].tool_calls[0]["args"] == {"city": "Paris"}
    (turn,) = b.turns
    assert (turn.input_tokens, turn.output_tokens, turn.cache_read_tokens) == (20, 7, 12)
    assert (b.model, b.provider) == ("claude-x", "anthropic")
    assert b.tools == [{"name": "weather", "description": "Weather by city"}]

    replay = ctxlab.replay(a, get("deepagents"))
    assert replay.turns["recorded_input_tokens"].to_list() == [100, 130, 40]
    assert len(ctxlab.replay(a, get("claude-code")).calls) == 3


def test_span_events_in_a_collector_jsonl(tmp_path: Path) -> None:
    """Semconv up to 1.36: one event per message, the body in the event's attributes (or in
    `gen_ai.event.content`, as Azure writes it); each line of the file one OTLP batch."""
    call = {"id": "x1", "type": "function", "function": {"name": "search", "arguments": '{"q": 1}'}}
    common = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}
    first = otlp_span(
        "t" * 32,
        "e1",
        10,
        {**common, "gen_ai.usage.input_tokens": 50, "gen_ai.request.model": "gpt-4o-mini"},
        events=(
            ("gen_ai.system.message", {"content": "sys"}),
            ("gen_ai.user.message", {"content": "hi"}),
            ("gen_ai.choice", {"index": 0, "message": {"role": "assistant", "tool_calls": [call]}}),
        ),
    )
    second = otlp_span(
        "t" * 32,
        "e2",
        20,
        {**common, "gen_ai.usage.input_tokens": 70},
        events=(
            ("gen_ai.system.message", {"content": "sys"}),
            ("gen_ai.user.message", {"gen_ai.event.content": json.dumps({"content": "hi"})}),
            ("gen_ai.assistant.message", {"tool_calls": [call]}),
            ("gen_ai.tool.message", {"content": "found 3", "id": "x1"}),
            ("gen_ai.choice", {"message": {"content": "Done: 3 results"}}),
        ),
    )
    path = tmp_path / "otel-collector.jsonl"
    path.write_text(json.dumps(otlp([first])) + "\n" + json.dumps(otlp([second])) + "\n")
    (trace,) = ctxlab.load(path)
    assert [m.type for m in trace.messages] == ["system", "human", "ai", "tool", "ai"]
    assert [t.position for t in trace.turns] == [2, 4]
    assert not any(t.compacted for t in trace.turns)
    assert trace.recorded_input_tokens == 120
    assert trace.messages[2].tool_calls[0]["args"] == {"q": 1}
    assert trace.metadata["conventions"] == ["gen_ai span events"]
    assert trace.model == "gpt-4o-mini"
    as_array = tmp_path / "batches.json"
    as_array.write_text(json.dumps([otlp([first]), otlp([second])]))
    (same,) = ctxlab.load(as_array)
    assert same.messages == trace.messages and len(same.turns) == 2


def vercel_spans() -> list[dict[str, Any]]:
    """The JS SDK in-memory exporter's dump of a two-step `generateText` with one tool call:
    the outer `ai.generateText` span and `ai.toolCall` span carry no call of their own."""
    trace = "v" * 32
    system = {"role": "system", "content": "You answer weather questions."}
    user = {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}
    call = {"type": "tool-call", "toolCallId": "call_1", "toolName": "weather"}
    result = {"type": "tool-result", "toolCallId": "call_1", "toolName": "weather"}
    tool = {"type": "function", "name": "weather", "inputSchema": {"type": "object"}}
    temp = {"type": "json", "value": {"temp": 12}}
    args = {"city": "Paris"}
    options = {"providerOptions": {"openai": {"itemId": "r1"}}}
    thought = {"type": "reasoning", "text": "Weather needs the tool.", **options}
    said = {"type": "text", "text": "Let me check.", **options}

    def span(span_id: str, start: list[int], attrs: dict[str, Any], **extra: Any) -> dict:
        return {
            "name": attrs["ai.operationId"],
            "spanContext": {"traceId": trace, "spanId": span_id},
            "attributes": attrs,
            "status": {"code": 0},
            "startTime": start,
            "endTime": start,
            "events": [],
            **extra,
        }

    return [
        span("g0", [100, 0], {"ai.operationId": "ai.generateText", "ai.response.text": "x"}),
        span(
            "d1",
            [100, 5],
            {
                "ai.operationId": "ai.generateText.doGenerate",
                "ai.model.id": "gpt-4o-mini",
                "ai.model.provider": "openai.chat",
                "ai.prompt.messages": json.dumps([system, user]),
                "ai.prompt.tools": [json.dumps(tool)],
                "ai.response.toolCalls": json.dumps(
                    [{**call, "input": json.dumps({"city": "Paris"})}]
                ),
                "ai.response.reasoning": "Weather needs the tool.",
                "ai.response.text": "Let me check.",
                "ai.usage.inputTokens": 30,
                "ai.usage.outputTokens": 8,
                "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
            },
            parentSpanId="g0",
        ),
        span("t1", [101, 0], {"ai.operationId": "ai.toolCall", "ai.toolCall.id": "call_1"}),
        span(
            "d2",
            [102, 0],
            {
                "ai.operationId": "ai.generateText.doGenerate",
                "ai.model.id": "gpt-4o-mini",
                "ai.prompt.messages": json.dumps(
                    [
                        system,
                        user,
                        {"role": "assistant", "content": [thought, said, {**call, "input": args}]},
                        {"role": "tool", "content": [{**result, "output": temp}]},
                    ]
                ),
                "ai.response.text": "12 degrees",
                "ai.usage.promptTokens": 55,
                "ai.usage.completionTokens": 4,
                "ai.usage.cachedInputTokens": 16,
            },
        ),
    ]


def test_vercel_ai_sdk_span_dump(tmp_path: Path) -> None:
    path = tmp_path / "all-spans.json"
    path.write_text(json.dumps(vercel_spans()))
    (trace,) = ctxlab.load(path)
    assert [m.type for m in trace.messages] == ["system", "human", "ai", "tool", "ai"]
    assert [t.run_id for t in trace.turns] == ["d1", "d2"]
    assert [t.position for t in trace.turns] == [2, 4]
    assert not any(t.compacted for t in trace.turns)
    assert [t.input_tokens for t in trace.turns] == [30, 55]
    assert trace.turns[1].cache_read_tokens == 16
    assert trace.messages[3].content == '{"temp":12}'
    assert trace.messages[2].tool_calls[0]["args"] == {"city": "Paris"}
    assert [b["type"] for b in trace.messages[2].content] == ["reasoning", "text"]
    assert trace.turns[0].started_at == "1970-01-01T00:01:40Z"
    assert [t["name"] for t in trace.tools] == ["weather"]
    assert trace.model == "gpt-4o-mini-2024-07-18" and trace.provider == "openai.chat"
    assert ctxlab.replay(trace, get("deepagents")).turns.height == 2


def test_phoenix_nested_attributes_and_a_doubly_instrumented_call(tmp_path: Path) -> None:
    """Phoenix REST spans nest attributes; a LangChain LLM span wrapping the OpenAI SDK's LLM
    span is one call, read from the inner span."""
    llm = {
        "model_name": "gpt-4o",
        "input_messages": [
            {"message": {"role": "system", "content": "S"}},
            {"message": {"role": "user", "content": "Q"}},
        ],
        "output_messages": [{"message": {"role": "assistant", "content": "A"}}],
        "token_count": {"prompt": 12, "completion": 3},
        "tools": [{"tool": {"json_schema": json.dumps({"type": "function", "name": "f"})}}],
    }

    def span(span_id: str, parent: str | None, kind: str, start: str) -> dict[str, Any]:
        attrs: dict[str, Any] = {"openinference": {"span": {"kind": kind}}}
        if kind == "LLM":
            attrs["llm"] = llm
        return {
            "name": kind.lower(),
            "context": {"trace_id": "p1", "span_id": span_id},
            "parent_id": parent,
            "start_time": start,
            "attributes": attrs,
        }

    data = [
        span("root", None, "CHAIN", "2025-01-01T00:00:00Z"),
        span("outer", "root", "LLM", "2025-01-01T00:00:01Z"),
        span("inner", "outer", "LLM", "2025-01-01T00:00:01.5Z"),
    ]
    path = tmp_path / "phoenix.json"
    path.write_text(json.dumps({"data": data, "next_cursor": None}))
    (trace,) = ctxlab.load(path)
    assert [m.type for m in trace.messages] == ["system", "human", "ai"]
    (turn,) = trace.turns
    assert (turn.run_id, turn.input_tokens, turn.output_tokens) == ("inner", 12, 3)
    assert turn.started_at == "2025-01-01T00:00:01.500000Z"
    assert trace.tools == [{"type": "function", "name": "f"}]
    assert any("instrumented twice" in note for note in trace.notes)


def test_calls_without_recorded_content_are_rebuilt_and_noted(tmp_path: Path) -> None:
    first = chat([USER], [CALL])
    second = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 9}
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(otlp([otlp_span("c" * 32, "s1", 1, first),
                                     otlp_span("c" * 32, "s2", 2, second)])))  # fmt: skip
    (trace,) = ctxlab.load(path)
    assert len(trace.turns) == 2 and trace.turns[1].output is None
    assert [m.type for m in trace.turns[1].inputs] == ["system", "human", "ai"]
    assert any("record no input messages" in note for note in trace.notes)


# ----------------------------------------------------------------------------- bad files


def write(tmp_path: Path, value: Any) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(value))
    return path


def bad_span(span_id: str, **attrs: Any) -> dict[str, Any]:
    """An OTLP file of one chat span whose attributes are overridden by `attrs`."""
    return otlp([otlp_span("d" * 32, span_id, 1, {**chat([USER], []), **attrs})])


WRONG_INT = [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12x"}}]
NO_PART_TYPE = json.dumps([{"role": "user", "parts": [{"content": 1}]}])
FLAT_WRONG_USAGE = {
    "gen_ai.operation.name": "chat",
    "gen_ai.usage.input_tokens": "many",
    "gen_ai.input.messages": json.dumps([USER]),
}
BAD_TIME = {"spanContext": {"traceId": "x", "spanId": "s2"}, "startTime": "yesterday"}


@pytest.mark.parametrize(
    ("value", "needles"),
    [
        (
            bad_span("s9", **{"gen_ai.input.messages": "[{"}),
            ["span s9", "'gen_ai.input.messages'", "invalid JSON"],
        ),
        (
            bad_span("s8", **{"gen_ai.input.messages": '{"a": 1}'}),
            ["span s8", "'gen_ai.input.messages'", "expected a JSON array"],
        ),
        (FLAT_WRONG_USAGE, ["'gen_ai.usage.input_tokens'", "token count"]),
        (
            otlp([{**otlp_span("d" * 32, "s7", 1, {}), "attributes": WRONG_INT}]),
            ["span s7", "'gen_ai.usage.input_tokens'", "not an integer"],
        ),
        (
            otlp([{**otlp_span("d" * 32, "s6", 1, {}), "attributes": "oops"}]),
            ["span s6", "'attributes' must be an object or a list"],
        ),
        (
            bad_span("s5", **{"gen_ai.input.messages": NO_PART_TYPE}),
            ["span s5", "gen_ai.input.messages message 0", "'type'"],
        ),
        (
            bad_span("s4", **{"gen_ai.input.messages": json.dumps([USER, RESULT])}),
            ["tool result for call 'c1'"],
        ),
        (
            otlp([otlp_span("d" * 32, "s3", 1, {"gen_ai.operation.name": "embeddings"})]),
            ["no model-call spans among 1 spans"],
        ),
        ([BAD_TIME], ["span s2", "start time 'yesterday'"]),
    ],
)
def test_bad_files_give_located_errors(tmp_path: Path, value: Any, needles: list[str]) -> None:
    path = write(tmp_path, value)
    with pytest.raises(TraceFormatError) as info:
        ctxlab.load(path)
    message = str(info.value)
    assert message.startswith(str(path))
    for needle in needles:
        assert needle in message


def test_bad_line_of_a_jsonl_export_is_named(tmp_path: Path) -> None:
    good = otlp([otlp_span("e" * 32, "g1", 1, chat([USER], [CALL]))])
    bad = otlp([otlp_span("e" * 32, "g2", 2, {**chat([USER], []), "gen_ai.output.messages": 5})])
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(TraceFormatError, match=r"line 2: span g2, attribute 'gen_ai.output"):
        ctxlab.load(path)


def test_tool_calls_without_ids_are_paired(tmp_path: Path) -> None:
    """Gemini records function calls without ids: each call gets one that is the same in every
    span repeating it, and the result after it answers it."""
    call = parts("assistant", {"type": "tool_call", "name": "ls", "arguments": {}})
    answer = parts("tool", {"type": "tool_call_response", "response": "a.py"})
    spans = [
        otlp_span("g" * 32, "g1", 1, chat([USER], [call])),
        otlp_span("g" * 32, "g2", 2, chat([USER, call, answer], [parts("assistant", text("ok"))])),
    ]
    path = tmp_path / "gemini.json"
    path.write_text(json.dumps(otlp(spans)))
    (trace,) = ctxlab.load(path)
    assert [m.type for m in trace.messages] == ["system", "human", "ai", "tool", "ai"]
    assert not any(t.compacted for t in trace.turns)
    assert trace.messages[2].tool_calls[0]["id"] == "call_2_0"
    assert trace.messages[3].tool_call_id == "call_2_0"


def test_python_to_json_spans_with_content_events(tmp_path: Path) -> None:
    """`span.to_json()` dumps (0x-prefixed ids, ISO times, flat attributes) with the
    `gen_ai.content.prompt` / `gen_ai.content.completion` events of semconv 1.26."""
    prompt = json.dumps([{"role": "user", "content": "2+2?"}])
    completion = json.dumps([{"role": "assistant", "content": "4"}])
    span = {
        "name": "chat gpt-4o",
        "context": {"trace_id": "0x" + "1" * 32, "span_id": "0x" + "2" * 16},
        "kind": "SpanKind.CLIENT",
        "parent_id": None,
        "start_time": "2025-03-01T10:00:00.000000Z",
        "attributes": {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 9},
        "events": [
            {"name": "gen_ai.content.prompt", "timestamp": "2025-03-01T10:00:00Z",
             "attributes": {"gen_ai.prompt": prompt}},
            {"name": "gen_ai.content.completion", "timestamp": "2025-03-01T10:00:01Z",
             "attributes": {"gen_ai.completion": completion}},
        ],
    }  # fmt: skip
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(span) + "\n")
    (trace,) = ctxlab.load(path)
    assert trace.trace_id == "1" * 32
    assert [m.content for m in trace.messages] == ["2+2?", "4"]
    assert trace.turns[0].run_id == "2" * 16 and trace.recorded_input_tokens == 9


def test_langfuse_observations_with_otel_attributes(tmp_path: Path) -> None:
    """Langfuse keeps an OTel-ingested span's attributes under `metadata.attributes`."""
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps([USER]),
        "gen_ai.output.messages": json.dumps([parts("assistant", text("3 files"))]),
        "gen_ai.usage.input_tokens": 11,
    }
    observations = [
        {"id": "o1", "traceId": "lf1", "type": "SPAN", "name": "agent",
         "startTime": "2025-05-01T00:00:00Z", "metadata": {"attributes": {}}},
        {"id": "o2", "traceId": "lf1", "type": "GENERATION", "name": "chat",
         "parentObservationId": "o1", "startTime": "2025-05-01T00:00:01Z",
         "metadata": {"attributes": attrs}},
    ]  # fmt: skip
    path = tmp_path / "langfuse.json"
    path.write_text(json.dumps(observations))
    (trace,) = ctxlab.load(path)
    assert trace.trace_id == "lf1" and trace.metadata["root_span_id"] == "o1"
    assert [m.type for m in trace.messages] == ["human", "ai"]
    assert trace.turns[0].run_id == "o2" and trace.recorded_input_tokens == 11


def test_openllmetry_anthropic_content_blocks(tmp_path: Path) -> None:
    """OpenLLMetry writes Anthropic content as a JSON string of blocks: tool_use and
    tool_result blocks become a tool call and its result."""
    use = [{"type": "tool_use", "id": "tu1", "name": "grep", "input": {"p": "x"}}]
    result = [{"type": "tool_result", "tool_use_id": "tu1", "content": "3 hits"}]
    attrs = {
        "llm.request.type": "chat",
        "gen_ai.system": "Anthropic",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": "Find x",
        "gen_ai.prompt.1.role": "assistant",
        "gen_ai.prompt.1.content": json.dumps(use),
        "gen_ai.prompt.2.role": "user",
        "gen_ai.prompt.2.content": json.dumps(result),
        "gen_ai.completion.0.content": "x appears 3 times",
        "gen_ai.usage.prompt_tokens": 300,
        "gen_ai.usage.cache_creation_input_tokens": 200,
    }
    path = tmp_path / "anthropic.json"
    path.write_text(json.dumps(attrs))
    (trace,) = ctxlab.load(path)
    assert [m.type for m in trace.messages] == ["human", "ai", "tool", "ai"]
    assert trace.messages[1].tool_calls[0]["id"] == "tu1"
    assert trace.messages[2].tool_call_id == "tu1"
    assert (trace.turns[0].input_tokens, trace.turns[0].cache_write_tokens) == (300, 200)


def test_openinference_spans_repeating_and_rewriting_history(tmp_path: Path) -> None:
    """Three OpenInference calls: the second repeats the first's input and output, the third
    rewrites the first message (a compaction), so its attributes are grouped afresh."""

    def attrs(messages: list[tuple[str, str]], answer: str) -> dict[str, Any]:
        out: dict[str, Any] = {"openinference.span.kind": "LLM", "llm.model_name": "m"}
        for index, (role, content) in enumerate(messages):
            out[f"llm.input_messages.{index}.message.role"] = role
            out[f"llm.input_messages.{index}.message.content"] = content
        out["llm.output_messages.0.message.role"] = "assistant"
        out["llm.output_messages.0.message.content"] = answer
        return out

    first = [("system", "S"), ("user", "one")]
    second = [*first, ("assistant", "1"), ("user", "two")]
    third = [("system", "S"), ("user", "summary of one and two"), ("user", "three")]
    spans = [
        {"spanContext": {"traceId": "oi", "spanId": f"s{i}"}, "startTime": [i, 0],
         "attributes": attrs(messages, answer)}
        for i, (messages, answer) in enumerate([(first, "1"), (second, "2"), (third, "3")])
    ]  # fmt: skip
    path = tmp_path / "oi.json"
    path.write_text(json.dumps(spans))
    (trace,) = ctxlab.load(path)
    assert [m.content for m in trace.messages] == [
        "S", "one", "1", "two", "2", "summary of one and two", "three", "3"
    ]  # fmt: skip
    assert [t.compacted for t in trace.turns] == [False, False, True]
    assert [len(t.inputs) for t in trace.turns] == [2, 4, 3]
