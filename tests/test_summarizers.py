"""Summarisers: fixed text, any LangChain chat model (cached), offline extractive default."""

from __future__ import annotations

from typing import Any

from deepagents.middleware.summarization import DEEPAGENTS_DEFAULT_SUMMARY_PROMPT
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from synthetic import make_trace

from ctxlab.policies import DeepAgents
from ctxlab.replay import replay
from ctxlab.summarizers import DEFAULT_PROMPT, LLM, Extractive, Fixed, format_prompt


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
    assert DEFAULT_PROMPT is DEEPAGENTS_DEFAULT_SUMMARY_PROMPT
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
    summarizer = LLM(model, path=tmp_path / "cache.json")
    first = summarizer.summarize(CONVERSATION)
    again = summarizer.summarize(CONVERSATION)
    assert first == again == "summary 1"
    assert model.prompts == [format_prompt(CONVERSATION)]
    assert summarizer.summarize(CONVERSATION[:2]) == "summary 2"
    reloaded = LLM(Recording(prompts=[]), path=tmp_path / "cache.json")
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
