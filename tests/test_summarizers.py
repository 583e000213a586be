"""Summarisers: fixed text, any LangChain chat model (cached), offline extractive default."""

from __future__ import annotations

from typing import Any

import pytest
from deepagents.middleware.summarization import DEEPAGENTS_DEFAULT_SUMMARY_PROMPT
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from ctxlab._replay.prompt_sections import outline
from ctxlab._replay.replay import replay
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import (
    DEFAULT_PROMPT,
    LLM,
    CachedExtractive,
    Extractive,
    Fixed,
    format_prompt,
)
from tests.synthetic import make_trace


class Recording(BaseChatModel):
    """A chat model that answers with a numbered summary and records every prompt it got."""

    prompts: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.prompts.append(messages[0].text)
        reply = AIMessage(f"  summary {len(self.prompts)}  \n")
        return ChatResult(generations=[ChatGeneration(message=reply)])


CONVERSATION = [
    HumanMessage("Please refactor /src/app/main.py to use the new config loader."),
    AIMessage(
        "Reading the module first.",
        tool_calls=[{"name": "read_file", "args": {"file_path": "/src/app/main.py"}, "id": "c1"}],
    ),
    ToolMessage("import os\nfrom /src/app/config.py import load", tool_call_id="c1"),
    AIMessage(
        "Writing the new version.",
        tool_calls=[
            {
                "name": "write_file",
                "args": {"file_path": "/src/app/main.py", "content": "..."},
                "id": "c2",
            }
        ],
    ),
]


def test_default_prompt_is_the_deepagents_one() -> None:
    assert DEFAULT_PROMPT == DEEPAGENTS_DEFAULT_SUMMARY_PROMPT
    text = format_prompt(CONVERSATION)
    assert "## SESSION INTENT" in text and "refactor /src/app/main.py" in text
    assert text == text.rstrip()


def test_fixed() -> None:
    assert Fixed("abc").summarize(CONVERSATION) == "abc"


def test_names_identify_what_summaries_depend_on() -> None:
    assert Fixed("a").name == Fixed("a").name != Fixed("b").name
    assert Extractive().name != Extractive(max_items=3).name
    assert LLM(Recording(prompts=[])).name != LLM(Recording(prompts=[]), prompt="{messages}").name


def test_llm_is_prompted_like_deepagents_and_cached(tmp_path) -> None:
    model = Recording(prompts=[])
    summarizer = LLM(model, store=tmp_path / "store.duckdb")
    first = summarizer.summarize(CONVERSATION)
    again = summarizer.summarize(CONVERSATION)
    assert first == again == "summary 1"
    assert model.prompts == [format_prompt(CONVERSATION)]
    assert summarizer.summarize(CONVERSATION[:2]) == "summary 2"
    reloaded = LLM(Recording(prompts=[]), store=tmp_path / "store.duckdb")
    assert reloaded.summarize(CONVERSATION) == "summary 1"


class Small(Recording):
    """Rejects prompts longer than `limit` characters the way providers do."""

    limit: int = 10**9

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if len(messages[0].text) > self.limit:
            raise ContextOverflowError("prompt is too long")
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_llm_retries_an_overflowing_prompt_with_the_middle_cut_out() -> None:
    long = [
        HumanMessage("start " + "x" * 40_000),
        AIMessage("middle " + "y" * 40_000),
        HumanMessage("end " + "z" * 40_000),
    ]
    model = Small(prompts=[], limit=100_000)
    assert LLM(model).summarize(long) == "summary 1"
    [sent] = model.prompts
    assert "[... middle of conversation omitted ...]" in sent and len(sent) < 100_000
    assert "start" in sent and "end zzz" in sent


def test_extractive_fills_the_prompt_sections_from_the_conversation() -> None:
    text = Extractive().summarize(CONVERSATION)
    assert text.startswith("## SESSION INTENT\nPlease refactor /src/app/main.py")
    for section in ("## SUMMARY", "## ARTIFACTS", "## NEXT STEPS"):
        assert section in text
    assert "- /src/app/main.py (read_file)" in text
    assert "Writing the new version." in text
    assert Extractive().summarize(CONVERSATION) == text
    assert Extractive().summarize([]).count("None") == 4


def test_extractive_keeps_the_intent_across_chained_summaries() -> None:
    first = Extractive().summarize(CONVERSATION)
    prior = HumanMessage(
        f"<summary>\n{first}\n</summary>", additional_kwargs={"lc_source": "summarization"}
    )
    chained = Extractive().summarize([prior, HumanMessage("Now add tests.")])
    assert chained.startswith("## SESSION INTENT\nPlease refactor /src/app/main.py")


def test_replay_uses_the_summarizer_and_llm_pays_once() -> None:
    trace = make_trace(120, seed=4, big=0.1)
    model = Recording(prompts=[])
    summarizer = LLM(model)
    first = replay(trace, DeepAgents(window=30_000), summarizer)
    calls = len(model.prompts)
    assert calls == sum(e.kind == "summarize" for e in first.event_list) > 0
    second = replay(trace, DeepAgents(window=30_000), summarizer)
    assert len(model.prompts) == calls
    assert second.turns.equals(first.turns)


# ----------------------------------------------------------------------------- prompt-aware


SESSION = [
    HumanMessage("Fix the failing checkout tests in /shop/cart.py."),
    AIMessage(
        "Running the tests first.",
        tool_calls=[{"name": "run_tests", "args": {"command": "pytest -x"}, "id": "t1"}],
    ),
    ToolMessage(
        "collected 12 items\nFAILED tests/test_cart.py::test_total - AssertionError\n"
        "E   KeyError: 'discount_rate'\n1 failed, 11 passed",
        tool_call_id="t1",
        name="run_tests",
    ),
    AIMessage(
        "Reading the cart module.",
        tool_calls=[{"name": "read_file", "args": {"file_path": "/shop/cart.py"}, "id": "t2"}],
    ),
    ToolMessage(
        "def cart_total(items):\n    return sum(i.price for i in items)", tool_call_id="t2"
    ),
    AIMessage("Should discounts apply before tax?"),
    HumanMessage("Yes, before tax. Also keep the API stable."),
    AIMessage(
        "Editing the total.",
        tool_calls=[{"name": "edit_file", "args": {"file_path": "/shop/cart.py"}, "id": "t3"}],
    ),
    ToolMessage("Error: String not found in file", tool_call_id="t3", status="error"),
]

GOAL_PROMPT = """Compact the agent's memory into exactly these sections:

## GOAL
The task in one sentence.

## FILES CHANGED
Every file touched, with the tool.

## ERRORS
Failures and their messages.

## OPEN QUESTIONS
What is still unresolved.

{messages}"""


def test_extractive_default_prompt_output_is_unchanged() -> None:
    """Golden, written by hand: replays and stored results depend on this exact text."""
    expected = (
        "## SESSION INTENT\n"
        "Please refactor /src/app/main.py to use the new config loader.\n\n"
        "## SUMMARY\n- Reading the module first.\n- Writing the new version.\n\n"
        "## ARTIFACTS\n- /src/app/main.py (read_file)\n- /src/app/config.py (mentioned)\n\n"
        "## NEXT STEPS\n"
        "- Last request: Please refactor /src/app/main.py to use the new config loader.\n"
        "- Last assistant step: Writing the new version."
    )
    assert Extractive().summarize(CONVERSATION) == expected
    assert Extractive().summarize(CONVERSATION, prompt=DEFAULT_PROMPT) == expected
    assert Extractive().summarize(SESSION) == (
        "## SESSION INTENT\nFix the failing checkout tests in /shop/cart.py.\n\n"
        "## SUMMARY\n- Running the tests first.\n- Reading the cart module.\n"
        "- Should discounts apply before tax?\n- Editing the total.\n\n"
        "## ARTIFACTS\n- /shop/cart.py (read_file)\n\n"
        "## NEXT STEPS\n- Last request: Yes, before tax. Also keep the API stable.\n"
        "- Last assistant step: Editing the total."
    )
    assert Extractive().name == "extractive:8:200"


def test_extractive_fills_the_sections_each_prompt_asks_for() -> None:
    default = Extractive().summarize(SESSION)
    goal = Extractive().summarize(SESSION, prompt=GOAL_PROMPT)
    assert goal != default
    assert goal == (
        "## GOAL\nFix the failing checkout tests in /shop/cart.py.\n\n"
        "## FILES CHANGED\n- /shop/cart.py (edit_file)\n\n"  # the writing tool, not the read
        "## ERRORS\n- run_tests: E   KeyError: 'discount_rate' (+1 more)\n"
        "- edit_file: Error: String not found in file\n\n"
        "## OPEN QUESTIONS\n- Should discounts apply before tax?"
    )
    assert Extractive().summarize(SESSION, prompt=GOAL_PROMPT) == goal  # deterministic


def test_extractive_reads_numbered_lists_and_section_tags() -> None:
    numbered = (
        "Your summary should include the following sections:\n"
        "1. Primary Request and Intent: the user's explicit requests\n"
        "2. Key Technical Concepts: names that matter\n"
        "3. Pending Tasks: what is left\n{messages}"
    )
    text = Extractive().summarize(SESSION, prompt=numbered)
    assert text.startswith("1. Primary Request and Intent:\nFix the failing checkout tests")
    assert (
        "2. Key Technical Concepts:\n"
        "- Identifiers: test_cart, test_total, AssertionError, KeyError, discount_rate, "
        "cart_total\n"
        "- Numbers: 12, 11\n\n"
    ) in text
    assert text.endswith(
        "3. Pending Tasks:\n- Last request: Yes, before tax. Also keep the API "
        "stable.\n- Last assistant step: Editing the total."
    )
    tagged = 'Fill <section name="Tools used"/> and <section name="Goal"/>.\n{messages}'
    assert Extractive().summarize(SESSION, prompt=tagged) == (
        '<section name="Tools used">\n- run_tests: pytest -x\n- read_file: /shop/cart.py\n'
        "- edit_file: /shop/cart.py\n</section>\n\n"
        '<section name="Goal">\nFix the failing checkout tests in /shop/cart.py.\n</section>'
    )


def test_extractive_falls_back_to_the_deepagents_sections() -> None:
    default = Extractive().summarize(SESSION)
    for prompt in ("Summarise this.\n{messages}", "## Foo\nx\n## Bar\ny\n{messages}"):
        assert Extractive().summarize(SESSION, prompt=prompt) == default


def test_extractive_honours_length_limits() -> None:
    two = GOAL_PROMPT.replace("{messages}", "At most 1 bullet per section.\n{messages}")
    text = Extractive().summarize(SESSION, prompt=two)
    assert "## ERRORS\n- edit_file: Error: String not found in file\n\n" in text
    for block in text.split("\n\n"):
        assert len(block.splitlines()) <= 2  # the heading and one line
    terse = "Summarise the conversation in at most five bullet points.\n{messages}"
    lines = [
        ln
        for ln in Extractive().summarize(SESSION, prompt=terse).splitlines()
        if ln and not ln.startswith("## ")
    ]
    assert len(lines) <= 5
    short = Extractive().summarize(SESSION, prompt=GOAL_PROMPT + "\nUse under 13 words.")
    body = [ln for ln in short.splitlines() if ln and not ln.startswith("## ")]
    assert sum(len(ln.removeprefix("- ").split()) for ln in body) <= 12
    assert short.startswith("## GOAL\nFix the failing...\n\n## FILES CHANGED")


def test_cached_extractive_keeps_facts_per_line_length() -> None:
    """Facts are remembered per message and per `line_chars`: two summarisers with different
    line lengths over the same message objects each get their own clipped lines."""
    long = [HumanMessage("Refactor " + "the loader " * 40), *CONVERSATION[1:]]
    for line_chars in (200, 30, 200, 30):
        assert CachedExtractive(line_chars=line_chars).summarize(long) == Extractive(
            line_chars=line_chars
        ).summarize(long)


def test_cached_extractive_gives_every_prompt_the_plain_text() -> None:
    """Remembered rows carry each tool result's error, plain ones do not: the same text either
    way, whichever prompt read a message's row first (a walk of Deep Agents' prompt, then a
    prompt that reads every row and lists errors, short and long inputs)."""
    from ctxlab._replay.policies.jetbrains import JETBRAINS_SUMMARY_PROMPT

    long = [*SESSION, *make_trace(60, seed=3, big=0.2).messages]
    prompts = (DEFAULT_PROMPT, GOAL_PROMPT, JETBRAINS_SUMMARY_PROMPT, DEFAULT_PROMPT)
    listed = []
    for messages in (list(SESSION), long):
        cached = CachedExtractive()
        for prompt in prompts:
            text = cached.summarize(messages, prompt=prompt)
            assert text == Extractive().summarize(messages, prompt=prompt)
            listed.append("- edit_file: Error: String not found in file" in text)
    assert listed[:4] == [False, True, True, False]  # both errors sections list the failure


def test_outline_falls_back_only_when_asked() -> None:
    assert outline("Summarise this.\n{messages}").sections == ()
    fallback = outline("Summarise this in at most 3 bullets.\n{messages}", DEFAULT_PROMPT)
    assert [s.header for s in fallback.sections] == [
        s.header for s in outline(DEFAULT_PROMPT).sections
    ]
    assert fallback.bullets == 3


@pytest.mark.parametrize("profile", [None, {"max_input_tokens": 20_000}, {"max_input_tokens": 1}])
def test_middle_cut_equals_langchains_overflow_retry(profile: dict | None) -> None:
    """ctxlab owns LangChain's retry prompt; the installed middleware is the oracle."""
    from langchain.agents.middleware.summarization import SummarizationMiddleware

    from ctxlab._replay.summarizers import middle_cut_prompt

    history = [
        HumanMessage("start " + "x" * 40_000),
        AIMessage("middle " + "y" * 40_000),
        HumanMessage("end " + "z" * 40_000),
    ]
    model = Small(prompts=[], profile=profile)
    upstream = SummarizationMiddleware(model=model, summary_prompt=DEFAULT_PROMPT)
    expected = upstream._overflow_retry_prompt(history)
    assert middle_cut_prompt(history, DEFAULT_PROMPT, model) == expected
    if profile and profile["max_input_tokens"] == 1:  # 40% of one token keeps nothing
        assert expected is None
    else:
        assert "[... middle of conversation omitted ...]" in expected


def test_names_and_numbers_match_line_by_line_as_in_the_whole_text() -> None:
    """Summary messages are matched line by line through a cache (`_line_names`): the same
    matches as the whole text, since neither pattern matches across a line break. Checked on
    every message and summary of a replay, and on edge cases at line ends."""
    from ctxlab._messages import message_text
    from ctxlab._replay.summarizers import _IDENT, _NUMBER, _line_names
    from ctxlab.policies import ClaudeCode

    trace = make_trace(120, seed=7, model="claude-sonnet-4-5")
    texts = [message_text(m) for m in trace.messages]
    texts += [e.summary for e in replay(trace, ClaudeCode(window=20_000)).event_list if e.summary]
    texts += ["12\n34.5/6\nsnake_case\n_x_\nfooBar\nFooBarBaz", "a/12\n/99\n.12\n-12\n12.", ""]
    for text in texts:
        head = text[:4000]
        for k, pattern in enumerate((_IDENT, _NUMBER)):
            lines = [w for line in head.split("\n") for w in _line_names(line)[k]]
            assert lines == pattern.findall(head)


def test_rows_read_on_demand_give_what_reading_every_row_gives() -> None:
    """`_Conversation` reads a message's row only where a section needs it (walking back for
    the latest statements, forward for the first artifacts) unless the prompt reads them all;
    every section gives the same either way, whatever the order and limits it is asked in."""
    from ctxlab._messages import summary_message
    from ctxlab._replay.prompt_sections import Section
    from ctxlab._replay.summarizers import _EXTRACTORS, _Conversation

    section = Section("SESSION INTENT", "## SESSION INTENT", "intent")
    for seed in range(6):
        messages = list(make_trace(40 + 13 * seed, seed=seed, big=0.2).messages)
        messages.insert(seed * 3, summary_message(f"## SESSION INTENT\nfix /src/m{seed}.py\n"))
        messages = messages[seed : len(messages) - seed]
        for limits in ([1, 8, 3, 50, 2], [0, 8, 8], [50], [2, 1]):
            lazy = _Conversation(messages, 200)
            eager = _Conversation(messages, 200, every_row=True)
            for name, extract in _EXTRACTORS.items():
                for limit in limits:
                    assert extract(lazy, section, limit) == extract(eager, section, limit), (
                        seed,
                        name,
                        limit,
                    )
