"""Exact OpenAI counts: known token counts of real strings, the cookbook's chat example, and the
recorded `input_tokens` of the real OpenAI traces in ../shared/data (skipped without it)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab._cost import openai_tokens as ot

REAL = "data/real-traces"

COOKBOOK = [
    (
        "system",
        None,
        "You are a helpful, pattern-following assistant that translates corporate jargon "
        "into plain English.",
    ),
    ("system", "example_user", "New synergies will help drive top-line growth."),
    ("system", "example_assistant", "Things working well together will increase revenue."),
    (
        "system",
        "example_user",
        "Let's circle back when we have more bandwidth to touch base on opportunities for "
        "increased leverage.",
    ),
    (
        "system",
        "example_assistant",
        "Let's talk later when we're less busy about how to do better.",
    ),
    (
        "user",
        None,
        "This late pivot means we don't have time to boil the ocean for the client deliverable.",
    ),
]
"""The example conversation of OpenAI's cookbook "How to count tokens with tiktoken"."""


def _cookbook_messages() -> list:
    return [
        (SystemMessage if role == "system" else HumanMessage)(content=text, name=name)
        for role, name, text in COOKBOOK
    ]


def test_known_string_counts() -> None:
    # Token ids and counts as tiktoken gives them (cookbook: "tiktoken is great!" is 6 tokens).
    assert ot.count_text("tiktoken is great!", "cl100k_base") == 6
    assert ot.count_text("tiktoken is great!", "o200k_base") == 6
    assert ot.count_text("hello world") == 2
    assert ot.count_text("") == 0
    # Special-token spellings inside content are ordinary text, not one special token.
    assert ot.count_text("<|endoftext|>") > 1


def test_cookbook_chat_example() -> None:
    # The cookbook prints 129 prompt tokens for gpt-4 / gpt-3.5 and 124 for gpt-4o(-mini),
    # matching what the API reported for the same messages.
    messages = _cookbook_messages()
    assert ot.OpenAICounter("cl100k_base").count(messages) == 129
    assert ot.OpenAICounter("o200k_base").count(messages) == 124


def test_encoding_for() -> None:
    assert ot.encoding_for("gpt-4o-mini-2024-07-18") == "o200k_base"
    assert ot.encoding_for("openai:gpt-4.1") == "o200k_base"
    assert ot.encoding_for("openai/o3-mini") == "o200k_base"
    assert ot.encoding_for("gpt-5.5") == "o200k_base"
    assert ot.encoding_for("gpt-4-0613") == "cl100k_base"
    assert ot.encoding_for("gpt-3.5-turbo") == "cl100k_base"
    assert ot.encoding_for("claude-sonnet-4-5") is None
    assert ot.encoding_for(None) is None
    with pytest.raises(ValueError, match="unknown encoding"):
        ot.OpenAICounter("p50k_base")


def test_count_is_fixed_plus_messages() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather in a city.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "City name"},
                        "unit": {"type": "string", "enum": ["c", "f"]},
                    },
                    "required": ["city"],
                },
            },
        }
    ]
    messages = [
        HumanMessage("Weather in Paris?"),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "1"}]),
        ToolMessage("rainy", tool_call_id="1", name="get_weather"),
    ]
    counter = ot.OpenAICounter()
    assert counter.count(messages, tools) == counter.fixed(tools) + sum(
        counter.message(m) for m in messages
    )
    assert counter.fixed(()) == ot.REPLY_PRIMING
    # A tool result is sent without its name: the name changes nothing.
    assert counter.message(messages[2]) == counter.message(ToolMessage("rainy", tool_call_id="1"))
    # A tool call costs its name and JSON arguments on top of the message framing.
    bare = counter.message(AIMessage(""))
    assert counter.message(messages[1]) == (
        bare
        + ot.TOKENS_PER_TOOL_CALL
        + ot.count_text("get_weather")
        + ot.count_text('{"city": "Paris"}')
    )
    assert ot.render_tools(tools) == (
        "namespace functions {\n\n// Weather in a city.\ntype get_weather = (_: {\n"
        '// City name\ncity: string,\nunit?: "c" | "f",\n}) => any;\n\n} // namespace functions'
    )


def _errors(trace: ctxlab.Trace, offset: int = 0) -> list[float]:
    counter = ot.OpenAICounter(ot.encoding_for(trace.model) or "o200k_base")
    return [
        abs(counter.count(t.inputs, trace.tools) + offset - t.input_tokens) / t.input_tokens * 100
        for t in trace.turns
        if t.input_tokens
    ]


def test_inspect_log_gpt4o_mini(shared: Path) -> None:
    # Fully recorded requests (messages and the eight tool schemas as sent): every call within
    # 1%, and what each call added (an assistant tool call and its result) exact to the token.
    (trace,) = ctxlab.load(shared / REAL / "inspect-ai-log")
    counter = ot.OpenAICounter(ot.encoding_for(trace.model))
    ours = [counter.count(t.inputs, trace.tools) for t in trace.turns]
    recorded = [t.input_tokens for t in trace.turns]
    assert len(ours) == 5
    assert max(_errors(trace)) <= 1.0
    assert [b - a for a, b in zip(ours, ours[1:], strict=False)] == [
        b - a for a, b in zip(recorded, recorded[1:], strict=False)
    ]


def test_langsmith_wrap_openai_exact(shared: Path) -> None:
    traces = ctxlab.load(shared / REAL / "langsmith-wrap-openai-payloads")
    got = sorted(
        (ot.OpenAICounter().count(t.turns[0].inputs), t.turns[0].input_tokens) for t in traces
    )
    assert got == [(9, 9), (43, 43)]


def test_otel_fixtures_lack_their_tool_schema(shared: Path) -> None:
    # The spans record the messages but not the `get_weather` schema that was sent (the loader
    # notes it): the count is short by about one small tool schema, never over.
    traces = ctxlab.load(shared / REAL / "otel-genai-openinference-attr-fixtures")
    assert len(traces) == 3
    for trace in traces:
        assert any("tool schemas" in note.lower() for note in trace.notes)
        (turn,) = trace.turns
        missing = turn.input_tokens - ot.OpenAICounter("cl100k_base").count(turn.inputs)
        assert 30 <= missing <= 60


def test_codex_rollout_without_tool_schemas(shared: Path) -> None:
    # Codex records neither its tool schemas nor the results of server-side web searches, nor
    # encrypted reasoning: raw counts are far low. With the unrecorded fixed part taken from
    # the first call, calls before the first web search are within 3% (median well under 1%).
    (trace,) = ctxlab.load(shared / REAL / "codex-rollout")
    assert statistics.median(_errors(trace)) > 10
    counter = ot.OpenAICounter("o200k_base")
    first = trace.turns[0]
    offset = first.input_tokens - counter.count(first.inputs)
    # The first call whose output holds a web search (its results are already in that call's
    # recorded input: the rollout logs the search before the reply it belongs to).
    searched = next(
        t.index
        for t in trace.turns
        if t.output and t.output.additional_kwargs.get("web_search_calls")
    )
    before = _errors(trace, offset)[:searched]
    assert len(before) >= 20
    assert statistics.median(before) <= 1.0
    assert max(before) <= 3.0
