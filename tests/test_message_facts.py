"""`ctxlab._messages`: one answer per question about a message, checked against the
upstream code that asks the same question (deepagents' text extraction, LangChain's summary
marker, the policies' characters-per-token)."""

from __future__ import annotations

import pytest
from deepagents.middleware._message_eviction import _extract_text_from_message
from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._messages import (
    KINDS,
    chars_per_token,
    is_summary,
    kind_of,
    message_text,
    paths_in,
    readable_text,
    summary_message,
)
from ctxlab._replay.policies import DeepAgents, catalog
from ctxlab.policies import KINDS as POLICY_KINDS
from tests.synthetic import make_trace

MESSAGES = [
    HumanMessage("plain text"),
    HumanMessage(["one", "two"]),
    HumanMessage([{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]),
    HumanMessage(
        [
            {"type": "text", "text": "cached", "cache_control": {"type": "ephemeral"}},
            {"type": "image", "source_type": "base64", "data": "aGk=", "mime_type": "image/png"},
            {"type": "text", "text": "after the image"},
        ]
    ),
    AIMessage(
        [
            {"type": "text", "text": "calling a tool"},
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "/a.py"}},
        ],
        tool_calls=[{"id": "t1", "name": "read_file", "args": {"path": "/a.py"}}],
    ),
    ToolMessage([{"type": "text", "text": "line 1\nline 2"}], tool_call_id="t1"),
    ToolMessage("", tool_call_id="t2"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=range(len(MESSAGES)))
def test_message_text_is_what_deepagents_measures(message) -> None:
    assert message_text(message) == _extract_text_from_message(message)


def test_message_text_keeps_blocks_on_their_own_lines() -> None:
    assert message_text(MESSAGES[2]) == "first\nsecond"
    assert MESSAGES[2].text == "firstsecond"  # LangChain's accessor would fuse the lines


def test_readable_text_adds_the_tool_calls() -> None:
    text = readable_text(MESSAGES[4])
    assert text.startswith("calling a tool\n") and "[call read_file] {'path': '/a.py'}" in text
    assert readable_text(MESSAGES[0]) == "plain text"


def test_is_summary_matches_langchains_own_summary_message() -> None:
    (upstream,) = SummarizationMiddleware._build_new_messages("the summary")
    assert is_summary(upstream) and kind_of(upstream) == "summary"
    mine = summary_message("the summary")
    assert mine.additional_kwargs == upstream.additional_kwargs
    assert not is_summary(HumanMessage("Here is a summary of the conversation to date: ..."))
    assert not is_summary(AIMessage("x", additional_kwargs={"lc_source": "summarization"}))


def test_kinds_and_buckets() -> None:
    assert POLICY_KINDS is KINDS  # one definition, re-exported
    assert [kind_of(m) for m in (SystemMessage("s"), HumanMessage("h"), *MESSAGES[4:6])] == [
        "system",
        "human",
        "ai",
        "tool_results",
    ]


def test_paths_in_running_text() -> None:
    text = "see /src/app.py and '/etc/conf' or x=/var/log/a.log, not https://h/x or 3/4"
    assert paths_in(text) == ["/src/app.py", "/etc/conf", "/var/log/a.log"]


@pytest.mark.parametrize(
    ("model", "provider", "expected"),
    [
        ("claude-sonnet-4-5", None, tk.ANTHROPIC_CHARS_PER_TOKEN),
        ("claude-sonnet-4-5", "anthropic", tk.ANTHROPIC_CHARS_PER_TOKEN),
        ("anthropic:claude-sonnet-4-5", None, tk.ANTHROPIC_CHARS_PER_TOKEN),
        ("gpt-5", None, tk.CHARS_PER_TOKEN),
        (None, None, tk.CHARS_PER_TOKEN),
    ],
)
def test_chars_per_token_is_the_policies_choice(model, provider, expected) -> None:
    """The same number DeepAgents and the stage policies resolve for a trace of that model."""
    assert chars_per_token(model, provider) == expected
    trace = make_trace(4, model=model, provider=provider)
    assert DeepAgents().resolve(trace).chars_per_token == expected
    assert catalog.get("clear-tool-uses").counter_chars_per_token(trace) == expected


def test_chars_per_token_given_wins() -> None:
    assert chars_per_token("claude-sonnet-4-5", None, 5) == 5.0
    assert chars_per_token("gpt-5", None, "auto") == tk.CHARS_PER_TOKEN
