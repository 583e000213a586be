"""ctxlab's own copies of Deep Agents' and LangChain's texts and rules, against the installed
packages (the oracle): every text equal to upstream's and pinned by the sha256 of its full text,
every function equal to upstream's on generated inputs.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from deepagents.backends.utils import MAX_LINE_LENGTH as UP_MAX_LINE_LENGTH
from deepagents.backends.utils import format_content_with_line_numbers as up_line_numbers
from deepagents.backends.utils import sanitize_tool_call_id as up_sanitize
from deepagents.backends.utils import validate_path as up_validate
from deepagents.middleware import _message_eviction as up_eviction
from deepagents.middleware import _overflow_clip as up_clip
from deepagents.middleware import filesystem as up_fs
from deepagents.middleware import summarization as up_summ
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents.middleware import context_editing as up_editing
from langchain.agents.middleware import summarization as up_lc_summ
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, get_buffer_string
from langchain_core.messages.utils import _is_message_type, count_tokens_approximately
from langgraph.prebuilt.tool_node import ToolCallRequest

from ctxlab import _messages as message_facts
from ctxlab._cost import tokens as tk
from ctxlab._replay.policies import langchain_rules, langchain_texts
from ctxlab._replay.policies.deepagents import filesystem, message_edits, texts
from ctxlab._replay.policies.deepagents_tools import default_tools
from tests.deepagents_oracle import tool_schemas_script, upstream_default_tools

SHA256 = {
    (texts, "TOO_LARGE_TOOL_MSG"): (
        "29b0cbc7d56467bf93a6fc3f2ec4ed78d4ca1b43aab50f8a08a76d026ae3db48",
        up_eviction._TOO_LARGE_TOOL_MSG,
    ),
    (texts, "TOO_LARGE_HUMAN_MSG"): (
        "7f0fd577a8c79c9c368679ca24021a47d6ba7cdc9bf9a746d02ca1ea9f68dfc5",
        up_fs._TOO_LARGE_HUMAN_MSG,
    ),
    (texts, "MEDIA_REFERENCE_SUMMARY_PROMPT"): (
        "7c1881a8164180886641daa403ed62b8261eccfb8bf8e4cf1288faaf3cc52865",
        up_summ._MEDIA_REFERENCE_SUMMARY_PROMPT,
    ),
    (texts, "DEEPAGENTS_DEFAULT_SUMMARY_PROMPT"): (
        "403eb2c93d8f8684545e1d863e1e2844fceec6f8808df16a585290b3a18aa16e",
        up_summ.DEEPAGENTS_DEFAULT_SUMMARY_PROMPT,
    ),
    (texts, "PARALLEL_MUTATION_ERROR"): (
        "ed7d6e7993ed4873d34ef2c7b260a062450a1a533f3f17078ad3ce2f2a7d3db3",
        None,  # inline in `_parallel_file_mutation_error`: checked through `rejected_result`
    ),
    (texts, "CAVEAT_OMITTED_LINES"): (
        "cde73a64da1abb6f7ee80c2edaededa59fee79007b8b289e394bb278348192a8",
        up_eviction._CAVEAT_OMITTED_LINES,
    ),
    (texts, "CAVEAT_CLIPPED_LINES"): (
        "83e02533e0c876d4423b7539c76e047622887ff2e2b6a364781355800c1085a4",
        up_eviction._CAVEAT_CLIPPED_LINES,
    ),
    (texts, "PREVIEW_NOTE_PLAIN"): (
        "e17b02430df18171e7292cfbb661d43b5f91b37780914d36a4bb6c363c23c435",
        up_eviction._PREVIEW_NOTE_PLAIN,
    ),
    (texts, "PREVIEW_NOTE_HEAD_TAIL"): (
        "c710e0ee225a96b59477a9fd2b9339775831cb35bc836bd94556271f59ad1e53",
        up_eviction._PREVIEW_NOTE_HEAD_TAIL,
    ),
    (texts, "TRUNCATION_MARKER_TEMPLATE"): (
        "433b4a9455ad3485681c51e49bf9cd17f06974e3c90f4e7bed9cea3ac1689522",
        up_eviction.TRUNCATION_MARKER_TEMPLATE,
    ),
    (texts, "SUMMARY_MESSAGE"): (
        "99276694b23f5e1e9497e31422c8bdd9813f1d7b515277a2848c17205c961929",
        None,  # an f-string in `_build_new_messages_with_path`: checked by rendering
    ),
    (texts, "READ_FILE_CLIP_NOTICE"): (
        "9a007224f0e363f7c56905db9c9c307cef3f6656d41f4a727db81a5986fa491b",
        None,  # an f-string in `_slice_read_file_tm`: checked by rendering
    ),
    (langchain_texts, "DEFAULT_SUMMARY_PROMPT"): (
        "3db0629298e760ec31ccb85d9102ef6c7d93f613b1dbc6b74ad18dce14538d0e",
        up_lc_summ.DEFAULT_SUMMARY_PROMPT,
    ),
    (langchain_texts, "DEFAULT_TOOL_PLACEHOLDER"): (
        "daaca7e27c255f32a0a4cac9dbf3b980315125b9ea3410a0dbaa74afe2c9fb14",
        up_editing.DEFAULT_TOOL_PLACEHOLDER,
    ),
}


@pytest.mark.parametrize(("module", "name"), list(SHA256), ids=lambda v: getattr(v, "__name__", v))
def test_text_equals_upstream_and_is_pinned(module: Any, name: str) -> None:
    digest, upstream = SHA256[(module, name)]
    ours = getattr(module, name)
    if upstream is not None:
        assert ours == upstream
    assert hashlib.sha256(ours.encode()).hexdigest() == digest


def test_constants_equal_upstream() -> None:
    assert filesystem.NUM_CHARS_PER_TOKEN == up_fs.NUM_CHARS_PER_TOKEN
    assert filesystem.TOOLS_EXCLUDED_FROM_EVICTION == up_fs.TOOLS_EXCLUDED_FROM_EVICTION
    assert texts.MAX_LINE_LENGTH == UP_MAX_LINE_LENGTH
    assert texts.PREVIEW_LINE_CHAR_LIMIT == up_eviction.PREVIEW_LINE_CHAR_LIMIT
    assert texts.VISIBLE_TOOL_CALL_ID_LIMIT == up_eviction._VISIBLE_TOOL_CALL_ID_LIMIT
    assert message_edits.NATIVE_REASONING_BLOCK_TYPES == up_summ._NATIVE_REASONING_BLOCK_TYPES
    assert message_edits.BEDROCK_PROVIDERS == up_summ._BEDROCK_PROVIDERS


_line = st.text(alphabet=st.sampled_from("ab \t.\u00e9\U0001f600"), max_size=30)
_lines = st.lists(
    st.one_of(
        _line, st.builds(lambda n: "x" * n, st.sampled_from([999, 1000, 1001, 5001, 10_001]))
    ),
    max_size=14,
)


@settings(max_examples=150, deadline=None)
@given(_lines, st.integers(1, 120))
def test_line_numbers_equal_upstream(lines: list[str], start: int) -> None:
    assert texts.format_content_with_line_numbers(lines, start) == up_line_numbers(lines, start)


@settings(max_examples=150, deadline=None)
@given(_lines, st.sampled_from(["\n", "\r\n", "\n\n"]), st.text(max_size=40))
def test_tool_stub_text_equals_upstream(lines: list[str], sep: str, call_id: str) -> None:
    content = sep.join(lines)
    preview = up_eviction._create_content_preview(content)
    assert texts.content_preview(content) == (
        preview.text,
        preview.lines_omitted,
        preview.lines_clipped,
    )
    ours = texts.render_too_large_tool_msg(call_id, "/large_tool_results/x", content)
    upstream = up_eviction._render_too_large_tool_msg(
        tool_call_id=call_id, file_path="/large_tool_results/x", content_str=content
    )
    assert ours == upstream


@pytest.mark.parametrize("omitted", [False, True])
@pytest.mark.parametrize("clipped", [False, True])
@pytest.mark.parametrize("subject", ["result", "content"])
def test_preview_note_equals_upstream(omitted: bool, clipped: bool, subject: str) -> None:
    upstream = up_eviction._preview_note(
        lines_omitted=omitted, lines_clipped=clipped, subject=subject
    )
    assert texts.preview_note(omitted, clipped, subject) == upstream


_content = st.one_of(
    st.builds(lambda lines: "\n".join(lines), _lines),
    st.lists(
        st.one_of(
            st.builds(lambda t: {"type": "text", "text": t}, _line),
            st.just({"type": "image", "url": "https://x/y.png"}),
            _line,
        ),
        max_size=4,
    ),
)


@settings(max_examples=150, deadline=None)
@given(_content, st.sampled_from(["c1", "call.1/a\\b", "x" * 200]))
def test_offload_messages_equal_upstream(content: Any, call_id: str) -> None:
    tool = ToolMessage(content=content, tool_call_id=call_id, name="execute", id="m3")
    text = message_facts.message_text(tool)
    assert text == up_eviction._extract_text_from_message(tool)
    path = f"/large_tool_results/{filesystem.sanitize_tool_call_id(call_id)}"
    assert filesystem.sanitize_tool_call_id(call_id) == up_sanitize(call_id)
    stub = up_eviction._render_too_large_tool_msg(
        tool_call_id=call_id, file_path=path, content_str=text
    )
    upstream = up_eviction._build_evicted_tool_message(
        tool, up_eviction._build_evicted_content(tool, stub)
    )
    assert filesystem.tool_stub(tool, path, text) == upstream
    human = HumanMessage(content=content, id="m1")
    upstream_human = up_fs._build_truncated_human_message(human, "/conversation_history/a.md")
    assert filesystem.truncated_human_message(human, "/conversation_history/a.md") == (
        upstream_human
    )


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab./\\~:C.."), max_size=12))
def test_validate_path_equals_upstream(path: str) -> None:
    try:
        expected = up_validate(path)
    except ValueError:
        with pytest.raises(ValueError):
            filesystem.validate_path(path)
    else:
        assert filesystem.validate_path(path) == expected


def test_rejected_parallel_mutation_equals_upstream() -> None:
    calls = [
        {"name": "write_file", "args": {"file_path": "/a.py", "content": "x"}, "id": "c1"},
        {"name": "edit_file", "args": {"file_path": "a.py"}, "id": "c2"},
        {"name": "read_file", "args": {"file_path": "/a.py"}, "id": "c3"},
        {"name": "delete", "args": {"file_path": "/b/../a.py"}, "id": "c4"},
    ]
    ai = AIMessage("", tool_calls=calls)
    for call in ai.tool_calls:
        request = ToolCallRequest(tool_call=call, tool=None, state={"messages": [ai]}, runtime=None)
        upstream = up_fs._parallel_file_mutation_error(request)
        assert filesystem.parallel_mutation(ai, call) == (upstream is not None)
        if upstream is not None:
            assert filesystem.rejected_result(call) == upstream


_reasoning_blocks = st.lists(
    st.sampled_from(
        [
            {"type": "thinking", "thinking": "t", "signature": "s"},
            {"type": "redacted_thinking", "data": "d"},
            {"type": "reasoning", "reasoning": "r"},
            {"type": "reasoning_content", "reasoning_content": {"text": "r"}},
            {"type": "text", "text": "answer"},
        ]
    ),
    max_size=5,
)
_providers = st.sampled_from(
    [
        {},
        {"model_provider": "anthropic"},
        {"model_provider": "openai"},
        {"model_provider": "bedrock_converse", "model_name": "anthropic.claude-3"},
        {"model_provider": "bedrock", "model_name": "openai.gpt-oss"},
    ]
)


@settings(max_examples=200, deadline=None)
@given(_reasoning_blocks, _providers)
def test_bound_reasoning_equals_upstream(blocks: list[dict], meta: dict) -> None:
    message = AIMessage(content=blocks, response_metadata=meta)
    assert message_edits.bound_reasoning_types(message) == up_summ._bound_reasoning_types(message)
    assert message_edits.drop_bound_reasoning(message) == up_summ._drop_bound_reasoning(message)
    size = message_edits.size_without_reasoning(message)
    dropped = up_summ._drop_bound_reasoning(message)
    if dropped is message:
        assert size is None
    else:
        assert size == tk.message_size(dropped)


def _summarization_middleware() -> Any:
    """The real summarisation middleware's class, uninitialised: the methods compared here
    read nothing from the instance but each other."""
    return object.__new__(up_summ._DeepAgentsSummarizationMiddleware)


@pytest.mark.parametrize("summary", ["s", "{braces} and <summary> tags\n\nlines"])
def test_summary_message_equals_upstream(summary: str) -> None:
    path = "/conversation_history/session_1.md"
    (upstream,) = _summarization_middleware()._build_new_messages_with_path(summary, path)
    assert texts.summary_message_text(path, summary) == upstream.content


def test_history_section_filters_summaries_as_upstream() -> None:
    summary = HumanMessage("old", additional_kwargs={"lc_source": "summarization"})
    messages = [summary, HumanMessage("go"), AIMessage("ok"), HumanMessage("again")]
    kept = _summarization_middleware()._filter_summary_messages(messages)
    assert [m for m in messages if not message_facts.is_summary(m)] == kept
    # `_offload_to_backend`'s section, around its own timestamp (the conformance tests compare
    # whole history files)
    section = f"## Summarized at T\n\n{get_buffer_string(kept, format='xml')}\n\n"
    assert texts.history_section("T", messages) == section


@pytest.mark.parametrize("text", ["short", "y" * 9_000])
def test_read_file_clip_equals_upstream(text: str) -> None:
    message = ToolMessage(text, tool_call_id="c1", name="read_file")
    upstream = up_clip._slice_read_file_tm(message, "/src/a.py")
    assert texts.read_file_clip(text, "/src/a.py") == upstream.content


def test_default_tool_schemas_are_the_packages() -> None:
    """The shipped data is what the script generates from the installed package now, and
    counts as the real tools do."""
    assert tool_schemas_script().main(["--check"]) == 0
    real = upstream_default_tools()
    assert [t["name"] for t in default_tools()] == [t.name for t in real]
    for chars_per_token in (3.3, 4.0):
        assert tk.tool_schema_tokens(default_tools(), chars_per_token) == (
            count_tokens_approximately([], tools=real, chars_per_token=chars_per_token)
        )


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(
        [HumanMessage("a"), AIMessage("a"), ToolMessage("a", tool_call_id="c"), HumanMessage("")]
    ),
    st.one_of(
        st.sampled_from(["human", "ai", "tool", "system"]),
        st.lists(st.sampled_from(["human", "ai", HumanMessage, ToolMessage]), max_size=3),
        st.sampled_from([AIMessage, ToolMessage]),
    ),
)
def test_is_message_type_equals_langchain_core(message: Any, types: Any) -> None:
    assert langchain_rules.is_message_type(message, types) == _is_message_type(message, types)


def test_default_messages_to_keep_equals_langchain() -> None:
    assert langchain_rules.DEFAULT_MESSAGES_TO_KEEP == up_lc_summ._DEFAULT_MESSAGES_TO_KEEP


@pytest.mark.parametrize(
    "size",
    [("fraction", 0), ("fraction", 1.5), ("tokens", 0), ("messages", -1), ("bytes", 3)],
)
def test_size_validation_equals_langchain(size: tuple[str, float]) -> None:
    with pytest.raises(ValueError) as upstream:
        up_lc_summ.SummarizationMiddleware._validate_context_size(size, "trigger")
    with pytest.raises(ValueError) as ours:
        langchain_rules.validate_size(size[0], size[1], "trigger")
    assert str(ours.value) == str(upstream.value)
