"""The LLM summariser's cache: in the store's `summaries` table when given a store, in memory
otherwise; concurrent writers (processes, sweep workers) lose nothing and agree on every text;
the same cache gives byte-identical replays. The chat model is LangChain's own fake chat model,
standing for any LangChain chat model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import HumanMessage

from ctxlab._store.store import Store
from ctxlab._store.sweep import sweep
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import DEFAULT_PROMPT, LLM
from tests.synthetic import make_trace

REPO = Path(__file__).resolve().parents[1]
ANSWERS = ["first summary " * 30, "second summary " * 45, "third " * 20]
ONE = ["the one summary " * 40]
GRID = {"trigger": ["fraction:0.5", "fraction:0.85"], "keep": ["messages:6", "fraction:0.1"]}


def _model(answers: list[str] = ANSWERS) -> FakeListChatModel:
    return FakeListChatModel(responses=answers)


def test_in_memory_without_a_store() -> None:
    model = _model()
    summarizer = LLM(model)
    asked = [HumanMessage("fix the parser")]
    assert summarizer.summarize(asked) == summarizer.summarize(asked) == ANSWERS[0].strip()
    assert model.i == 1
    [row] = summarizer.take_pending()
    assert row.text == ANSWERS[0].strip() and summarizer.take_pending() == []


def test_in_the_store_when_given_one(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    asked = [HumanMessage("fix the parser")]
    first = LLM(_model(), store=store).summarize(asked)
    assert store.summaries() == {LLM(_model()).key(asked, DEFAULT_PROMPT): first}
    model = _model()
    again = LLM(model, store=tmp_path / "s.duckdb")  # a path works too
    assert again.summarize(asked) == first and model.i == 0  # no model call: read from the store
    assert again.take_pending() == []  # the store has it: nothing for anyone else to store


WRITER = """
import json, sys
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from ctxlab.summarizers import LLM
path, order, answers = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
summarizer = LLM(FakeListChatModel(responses=answers), store=path)
items = list(range(40)) if order == "up" else list(range(39, -1, -1))
got = {i: summarizer.summarize([HumanMessage(f"conversation {i}")]) for i in items}
print(json.dumps(got))
"""


def test_two_processes_writing_one_store_lose_nothing_and_agree(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    Store(path)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), order, json.dumps(ANSWERS)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for order in ("up", "down")
    ]
    outputs = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    stored = Store(path).summaries()
    assert len(stored) == 40  # every request, once
    reader = LLM(_model())
    for i in range(40):
        key = reader.key([HumanMessage(f"conversation {i}")], DEFAULT_PROMPT)
        assert outputs[0][str(i)] == outputs[1][str(i)] == stored[key]


def test_sweep_workers_store_every_entry_and_the_cache_replays_byte_identically(
    tmp_path: Path,
) -> None:
    traces = [
        make_trace(50, seed=s, model="claude-sonnet-4-5", provider="anthropic") for s in (1, 2)
    ]
    # One answer: the model's own answers do not depend on which worker asked first.
    first = tmp_path / "first.duckdb"
    out = sweep(
        traces, DeepAgents(window=40_000), GRID, store=first, summarizer=LLM(_model(ONE)),
        workers=2, progress=False, batch_seconds=0.0,
    )  # fmt: skip
    assert out["events"].sum() > 0
    cached = Store(first).summaries()
    assert cached
    # A second sweep reading that cache calls no model and stores the same rows, byte for byte.
    model = _model(ONE)
    second = tmp_path / "second.duckdb"
    sweep(
        traces, DeepAgents(window=40_000), GRID, store=second,
        summarizer=LLM(model, store=first), workers=1, progress=False,
    )  # fmt: skip
    assert model.i == 0  # every summary the workers wrote was stored
    a, b = Store(first), Store(second)
    for sql in (
        "SELECT * EXCLUDE (created_at) FROM replays ORDER BY replay_key",
        "SELECT * FROM turns ORDER BY replay_key, turn",
        "SELECT * FROM events ORDER BY replay_key, seq",
    ):
        assert a.query(sql).equals(b.query(sql)), sql
    summaries = a.query("SELECT summary FROM events WHERE kind = 'summarize'")["summary"]
    assert set(summaries.to_list()) <= set(cached.values())
