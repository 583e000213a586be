"""Real models fail: every failure path of summaries and probes, with window-honest chat models.

`tests/window_model.py`'s models are real `BaseChatModel`s that refuse requests past their
window with the errors the real backends raise (LangChain, OpenAI, Anthropic, Google,
llama.cpp, transformers, Ollama) and can fail half their calls: what a small local model or a
provider outage does, deterministically, in every CI run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import openai
import polars as pl
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import PromptTemplate

import ctxlab
from ctxlab._cli.main import main
from ctxlab._cli.model_spec import ModelSpecError, model_from_spec
from ctxlab._evaluate import probes
from ctxlab._replay.model_calls import CallSettings, CallTimeout
from ctxlab._replay.overflow import is_overflow, model_window, stated_window
from ctxlab._replay.replay import FALLBACK_SUMMARY, replay
from ctxlab._store.store import Store
from ctxlab.policies import DeepAgents, get
from ctxlab.summarizers import (
    LLM,
    PromptError,
    SummaryError,
    checked_prompt,
    format_prompt,
    literal_prompt,
)
from tests.samples import long_trace
from tests.test_probes import langchain_replay, make_trace
from tests.window_model import BACKENDS, OUTAGE, WindowJudge, WindowModel, overflow_error

LONG = Path(__file__).resolve().parents[1] / "traces" / "deepagents_long_session.jsonl.xz"

HISTORY = [
    HumanMessage("start: fix the loader " + "x" * 12_000),
    AIMessage("middle " + "y" * 12_000),
    HumanMessage("end " + "z" * 12_000),
]
"""About 12,000 tokens to the window models: far past a 2,048-token window."""


@pytest.fixture
def outage():
    """Half the calls of every window model fail while `outage["on"]` (off again after)."""
    yield OUTAGE
    OUTAGE["on"] = False


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backends_overflow_error_is_recognised(backend: str) -> None:
    error = overflow_error(backend, 7907, 2048)
    assert is_overflow(error)
    assert stated_window(error) in (2048, None)
    if backend in ("llamacpp", "transformers", "openai", "anthropic", "google", "ollama"):
        assert stated_window(error) == 2048


def test_other_failures_are_not_overflows() -> None:
    assert not is_overflow(ConnectionError("provider unavailable"))
    assert not is_overflow(ValueError("invalid model name"))
    request = __import__("httpx").Request("POST", "http://127.0.0.1/v1")
    limited = openai.RateLimitError(
        "rate limited",
        response=__import__("httpx").Response(429, request=request),
        body={"code": "rate_limit_exceeded", "message": "slow down"},
    )
    assert not is_overflow(limited)


def test_window_comes_from_the_parameter_profile_or_backend() -> None:
    model = WindowModel()
    assert model_window(model) is None
    assert model_window(model, 1000) == 1000
    profiled = model.model_copy(update={"profile": {"max_input_tokens": 8192}})
    assert model_window(profiled) == 8192


@pytest.mark.parametrize("backend", BACKENDS)
def test_summary_past_the_window_is_cut_then_chunked(backend: str) -> None:
    model = WindowModel(window=2048, backend=backend)
    summarizer = LLM(model)
    text = summarizer.summarize(HISTORY)
    assert text.startswith("summary of ")
    assert model.refused and max(model.accepted) <= 2048  # the model said no, then fit
    assert summarizer.stats["middle_cut"] + summarizer.stats["chunked"] >= 1
    again = LLM(WindowModel(window=2048, backend=backend))
    assert again.summarize(HISTORY) == text  # same model, same input: same summary


def test_a_known_window_is_never_overflowed() -> None:
    model = WindowModel(window=2048)
    summarizer = LLM(model, window=1500)  # known (and smaller than the real one): cut at once
    summarizer.summarize(HISTORY)
    assert model.refused == [] and summarizer.stats["middle_cut"] == 1


def test_a_too_long_middle_cut_goes_to_chunks() -> None:
    model = WindowModel(window=2048)
    summarizer = LLM(model, window=6000)  # claims more than the model takes: the cut overflows
    text = summarizer.summarize(HISTORY)
    assert summarizer.stats == {"middle_cut": 2, "chunked": 1}  # 6,000, then the stated 2,048
    assert text.startswith("summary of ") and max(model.accepted) <= 2048


def test_a_stress_replay_summarises_with_a_small_model() -> None:
    trace = long_trace()
    policy = DeepAgents(stress=0.1)
    model = WindowModel(window=4096, backend="llamacpp")
    summarizer = LLM(model)
    result = replay(trace, policy, summarizer)
    summaries = result.events.filter(pl.col("kind") == "summarize")["summary"].to_list()
    assert summaries and all(s.startswith("summary of ") for s in summaries)
    assert model.refused and max(model.accepted) <= 4096  # the forced overflows were cut
    again = replay(trace, policy, LLM(WindowModel(window=4096, backend="llamacpp")))
    assert again.events.equals(result.events)  # byte-identical replays


def test_a_summary_that_cannot_fit_names_trace_turn_and_sizes() -> None:
    trace = make_trace()
    policy = get("langchain-summarization", trigger=("messages", 12), keep=("messages", 5))
    tiny = WindowModel(window=300, backend="transformers")  # the prompt alone is larger
    with pytest.raises(SummaryError) as caught:
        replay(trace, policy, LLM(tiny))
    message = str(caught.value)
    assert f"trace {trace.trace_id!r}, turn " in message
    assert "window of 300 tokens" in message and "tokens does not fit" in message
    assert "LLM(model, window=N)" in message


def test_langchains_placeholder_summary_is_counted_and_warned() -> None:
    trace = long_trace()
    with pytest.warns(UserWarning, match="fell back to LangChain's placeholder") as said:
        policy = get("langchain-summarization", window=30000, trigger=("fraction", 0.5))
        result = replay(trace, policy)  # its default trim_tokens_to_summarize: 4,000
    assert len([w for w in said if "fell back" in str(w.message)]) == 1  # once per replay
    summaries = result.events.filter(pl.col("kind") == "summarize")["summary"]
    assert result.fallback_summaries == (summaries == FALLBACK_SUMMARY).sum() > 0


def test_empty_summaries_are_counted_warned_and_not_cached() -> None:
    summarizer = LLM(WindowModel(empty=True))
    with pytest.warns(UserWarning, match="empty summary") as said:
        summarizer.summarize(HISTORY[:1])
        summarizer.summarize(HISTORY[1:2])
    assert len(said) == 1 and summarizer.stats["empty"] == 2
    assert summarizer.cache == {} and summarizer.pending == [] and len(summarizer.empty) == 2


def test_prompts_are_checked_templates() -> None:
    with pytest.warns(UserWarning, match="no \\{messages\\} placeholder"):
        completed = checked_prompt("## Goal\n## Files (checked once)")
    assert completed.endswith("<conversation>\n{messages}\n</conversation>")
    assert "hello" in format_prompt([HumanMessage("hello")], "## Goal\n## Files (checked once)")
    with pytest.raises(PromptError, match="placeholder \\{name\\}.*\\{\\{name\\}\\}"):
        checked_prompt("Reply as {name}: {messages}")
    with pytest.raises(PromptError, match="lone brace at line 2, column 5"):
        checked_prompt("Keep\nthe { of JSON: {messages}")
    with pytest.raises(PromptError, match="has no \\{messages\\}"):
        checked_prompt("## Goal", complete=False)
    json_prompt = literal_prompt('Answer as {"goal": "..."}.\n{messages}')
    model = WindowModel()
    LLM(model, prompt=json_prompt).summarize(HISTORY[:1])
    assert '{"goal": "..."}' in model.log[-1][0].text  # the braces reach the model as written
    template = PromptTemplate.from_template("Summarise:\n{messages}")
    assert checked_prompt(template) == "Summarise:\n{messages}"
    with pytest.raises(PromptError, match="placeholder"):
        LLM(model, prompt="{who} said: {messages}")


def test_calls_are_retried_with_backoff_and_timed_out() -> None:
    class Flaky(WindowModel):
        fails: list[int] = []

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            if len(self.fails) < 2:
                self.fails.append(1)
                raise ConnectionError("dropped")
            return super()._generate(messages, stop, run_manager, **kwargs)

    flaky = Flaky()
    assert CallSettings(retries=2, backoff=0.01).invoke(flaky, "hi").text.startswith("summary")
    assert len(flaky.fails) == 2
    with pytest.raises(ConnectionError):
        CallSettings(retries=1, backoff=0).invoke(Flaky(fails=[]), "hi")
    slow = WindowModel(delay=2.0)
    started = time.monotonic()
    with pytest.raises(CallTimeout, match="no answer within 0.2 s"):
        CallSettings(retries=0, timeout=0.2).invoke(slow, "hi")
    assert time.monotonic() - started < 1.5
    overflowing = WindowModel(window=10)
    with pytest.raises(ValueError, match="exceed context window"):
        CallSettings(retries=3, backoff=5).invoke(overflowing, "x" * 100)  # never retried
    assert len(overflowing.refused) == 1


def _evaluate(cache, model=None, judge=None, **kwargs):
    return ctxlab.evaluate(
        langchain_replay(),
        model=model or WindowModel(window=100_000),
        judge=judge or WindowJudge(window=100_000),
        cache=cache if cache is not None else probes.MemoryProbeCache(),
        retries=0,
        **kwargs,
    )


def test_failing_half_the_calls_then_rerunning_asks_only_those(tmp_path: Path, outage) -> None:
    reference = _evaluate(Store(tmp_path / "reference.duckdb"))  # uninterrupted
    model, judge = WindowModel(window=100_000), WindowJudge(window=100_000)
    store = tmp_path / "s.duckdb"
    outage["on"] = True
    broken = _evaluate(store, model, judge)
    assert broken.facts.equals(reference.facts)  # Tier 1 whatever the model does
    failed = broken.probes.filter(pl.col("error").is_not_null())
    assert 0 < failed.height < broken.probes.height
    assert failed["error"].str.contains("ConnectionError: provider unavailable").all()
    assert failed.filter(pl.col("error").str.starts_with("answer_call"))["score"].null_count()
    first = len(model.log) + len(judge.log)
    outage["on"] = False
    model2, judge2 = WindowModel(window=100_000), WindowJudge(window=100_000)
    healed = _evaluate(store, model2, judge2)
    asked = len(model2.log) + len(judge2.log)
    assert 0 < asked < first  # only the failed calls (and judge calls that waited on them)
    assert all(
        p not in [q for q in model.log if q not in model2.log] for p in model2.log
    )  # nothing answered in the first run was asked again
    assert healed.probes.equals(reference.probes)
    assert healed.facts.equals(reference.facts)
    third = WindowModel(window=100_000)
    _evaluate(store, third, WindowJudge(window=100_000))
    assert third.log == []  # everything cached now


def test_the_default_cache_is_in_memory_and_says_so() -> None:
    from ctxlab._evaluate import evaluation

    evaluation._SAID.clear()
    with pytest.warns(UserWarning, match="cached in memory only"):
        ctxlab.evaluate(langchain_replay(), model=WindowModel(model_name="memory-model"))
    again = WindowModel(model_name="memory-model")
    ctxlab.evaluate(langchain_replay(), model=again)
    assert again.log == []  # the rerun in this process asked nothing


def test_the_ceiling_is_capped_at_the_probe_models_window() -> None:
    full = _evaluate(None, probes="recall")
    unaware = WindowModel(window=200, backend="anthropic")  # window not known to ctxlab
    refused = _evaluate(None, unaware, probes="recall")
    assert refused.probes["error"].str.contains("ceiling_call: BadRequestError").all()
    assert refused.probes["ceiling_score"].null_count() == refused.probes.height
    assert refused.probes["score"].null_count() == 0  # the compacted request fit
    model = WindowModel(window=200, backend="anthropic")
    capped = _evaluate(None, model, probes="recall", window=200)  # --model-window 200
    notes = capped.probes["ceiling_note"]
    assert notes.str.contains("capped at the model's window \\(200 tokens\\)").all()
    assert capped.probes["error"].null_count() == capped.probes.height  # every call fit
    assert max(model.accepted) <= 200 and model.refused == []
    assert capped.probes.height == full.probes.height
    skipped = _evaluate(None, WindowModel(window=100_000), probes="recall", ceiling="skip")
    assert skipped.probes["ceiling_score"].null_count() == skipped.probes.height
    assert skipped.probes["ceiling_note"].str.contains("skipped").all()
    tiny = WindowModel(window=60, backend="google")
    over = _evaluate(None, tiny, probes="recall")  # even the compacted request is too long
    assert over.probes["error"].str.contains("exceeds the maximum number of tokens").all()
    assert over.probes["score"].null_count() == over.probes.height


def test_unparseable_grades_are_counted_warned_and_kept() -> None:
    with pytest.warns(UserWarning, match="had no 'GRADE: <0-5>' line"):
        result = ctxlab.evaluate(
            langchain_replay(),
            model=WindowModel(window=100_000),
            judge=WindowJudge(window=100_000, ungraded=True),
            probes=["continuation"],
            cache=probes.MemoryProbeCache(),
        )
    frame = result.probes
    assert frame["score"].null_count() == frame.height
    assert frame["judge_reply"].str.contains("looks about right").all()


def test_max_calls_and_turns_choose_what_is_asked() -> None:
    model = WindowModel(window=100_000)
    with pytest.warns(UserWarning, match="max_calls=4 asks 2 of"):
        result = _evaluate(None, model, probes=["recall"], max_calls=4)
    assert result.probes.height == 2 and len(model.log) == 4


def test_prompt_diff_keeps_a_side_whose_prompt_is_refused() -> None:
    from ctxlab.widgets import PromptDiff

    trace = make_trace()
    diff = PromptDiff(trace, "## Goal\n{messages}", "Reply as {who}: {messages}")
    a, b = diff.sides
    assert a.summary and a.error is None
    assert b.summary == "" and "PromptError" in b.error and "{who}" in diff.summary_b.value


def test_model_specs_name_factories_and_missing_packages() -> None:
    model = model_from_spec("tests.window_model:factory")
    assert isinstance(model, WindowModel)
    with pytest.raises(ModelSpecError, match="pip install -U langchain-ollama"):
        model_from_spec("ollama:llama3.2")
    with pytest.raises(ModelSpecError, match="llama.cpp is not an init_chat_model provider"):
        model_from_spec("llamacpp:/models/smol.gguf")
    with pytest.raises(ModelSpecError, match="not a LangChain chat model"):
        model_from_spec("builtins:dict")
    assert probes.model_name(model) == "window-model"


def test_dry_run_on_the_long_sample_with_an_8k_model(capsys) -> None:
    code = main(
        [
            "evaluate",
            str(LONG),
            "--model",
            "openai:gpt-4",  # its LangChain profile: 8,192 input tokens
            "--judge",
            "openai:gpt-4",
            "--dry-run",
            "--store",
            "/nonexistent/s.duckdb",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "over_window_full" in out and "8,192" in out
    assert "calls would not fit the window uncapped; with the ceiling capped" in out
    code = main(
        [
            "evaluate",
            str(LONG),
            "--model",
            "tests.window_model:factory",
            "--model-window",
            "8192",
            "--probes",
            "recall,next_action",
            "--max-calls",
            "10",
            "--dry-run",
            "--format",
            "json",
            "--store",
            "/nonexistent/s.duckdb",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    calls = doc["dry_run"][0]["calls"]
    assert code == 0 and 0 < len(calls) <= 10
    assert {c["kind"] for c in calls} <= {"recall", "next_action"}
    assert {c["price"] for c in calls} == {"no price"} and "$0" not in json.dumps(doc)
    assert all(c["window"] == 8192 for c in calls)
