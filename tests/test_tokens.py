"""ctxlab._cost.tokens must equal LangChain's `count_tokens_approximately`, message for message."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from ctxlab._cost import tokens as tk

text = st.text(max_size=300)
args = st.dictionaries(
    st.sampled_from(["file_path", "content", "n"]), text | st.integers(), max_size=3
)
calls = st.lists(
    st.builds(
        lambda name, a, i: {"name": name, "args": a, "id": f"call_{i}", "type": "tool_call"},
        st.sampled_from(["write_file", "read_file", "execute"]),
        args,
        st.integers(0, 10**6),
    ),
    max_size=3,
)
blocks = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, text),
        st.builds(lambda t: {"type": "thinking", "thinking": t, "signature": "s"}, text),
        st.just({"type": "image_url", "image_url": {"url": "https://x/y.png"}}),
        text,
    ),
    max_size=4,
)
content = text | blocks
messages = st.one_of(
    st.builds(HumanMessage, content=content),
    st.builds(SystemMessage, content=text),
    st.builds(lambda c, tc: AIMessage(content=c, tool_calls=tc), content, calls),
    st.builds(
        lambda c, i, n: ToolMessage(content=c, tool_call_id=i, name=n),
        content,
        st.text(min_size=1, max_size=40),
        st.none() | st.sampled_from(["read_file", "execute"]),
    ),
)
tools = st.lists(
    st.builds(lambda n, d: {"name": n, "description": d, "input_schema": {}}, text, text),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(messages, max_size=6), tools, st.sampled_from([4.0, 3.3]))
def test_count_equals_langchain(msgs, schemas, cpt) -> None:
    expected = count_tokens_approximately(msgs, chars_per_token=cpt, tools=schemas)
    assert tk.count_tokens(msgs, tools=schemas, chars_per_token=cpt) == expected
    assert (
        sum(tk.message_tokens(m, cpt) for m in msgs) + tk.tool_schema_tokens(schemas, cpt)
        == expected
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(messages, min_size=1, max_size=6),
    st.lists(st.integers(0, 5000), min_size=6, max_size=6),
    st.sampled_from(["anthropic", "openai", None]),
)
def test_usage_scaling_equals_langchain(msgs, totals, provider) -> None:
    scaled = []
    for m, total in zip(msgs, totals, strict=False):
        if isinstance(m, AIMessage):
            m = m.model_copy(
                update={
                    "usage_metadata": {
                        "input_tokens": total,
                        "output_tokens": 0,
                        "total_tokens": total,
                    },
                    "response_metadata": {"model_provider": provider} if provider else {},
                }
            )
        scaled.append(m)
    per = [tk.message_tokens(m) for m in scaled]
    ours = math.ceil(sum(per) * tk.usage_scale(scaled, per, 0))
    assert ours == count_tokens_approximately(scaled, use_usage_metadata_scaling=True)


def test_spec_examples() -> None:
    """The hand-checked numbers of the spec (§2.2)."""
    ai = AIMessage(
        "hello there",
        tool_calls=[{"name": "read_file", "args": {"file_path": "/a"}, "id": "c1"}],
    )
    assert tk.message_tokens(HumanMessage("abc")) == 5
    assert tk.message_tokens(SystemMessage("")) == 5
    tool = ToolMessage("x" * 1001, tool_call_id="toolu_1", name="read_file")
    assert tk.message_tokens(tool) == 259
    assert tk.message_tokens(ai) == count_tokens_approximately([ai])


def test_cache_is_per_object() -> None:
    """A new message with other content is measured anew even if it reuses an old id()."""
    for size in range(50):
        assert (
            tk.message_tokens(HumanMessage("x" * size * 8)) == 2 * size + 4
        )  # "user" + 8n chars, +3


def test_derived_each_shares_the_memo_of_derived() -> None:
    """`derived_each` gives what `derived` gives, per message, from the same entries: a value
    made by either is not made again by the other, and a message object seen twice is made once."""
    a, b = HumanMessage("first"), AIMessage("second")
    made: list[str] = []

    def make(m):
        made.append(m.text)
        return m.text.upper()

    assert tk.derived(a, "upper-test", lambda: make(a)) == "FIRST"
    assert tk.derived_each([a, b, b], "upper-test", make) == ["FIRST", "SECOND", "SECOND"]
    assert tk.derived(b, "upper-test", lambda: make(b)) == "SECOND"
    assert made == ["first", "second"]
    assert tk.derived_each([a], "other-key", lambda m: len(m.text)) == [5]


def test_a_redacted_image_counts_as_the_image_it_was() -> None:
    """A shared Codex rollout keeps its images as `[REDACTED_IMAGE_URL len=N ...]`, N the data
    URL's length (6.8 million characters for one screenshot): the block still counts as one
    image, as the unredacted block does, while redacted text counts the characters it hid."""
    url = "data:image/png;base64," + "A" * 5_000
    text = "look at this"

    def message(image: str, words: str) -> HumanMessage:
        return HumanMessage(
            [{"type": "text", "text": words}, {"type": "image_url", "image_url": {"url": image}}]
        )

    original = message(url, text)
    redacted = message(
        f"[REDACTED_IMAGE_URL len={len(url)} sha=3ef15eaa]",
        f"[REDACTED_TEXT len={len(text)} sha=d62a3c8d]",
    )
    assert tk.message_tokens(redacted) == tk.message_tokens(original)
    assert tk.message_tokens(original) < 100
