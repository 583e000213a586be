"""Evaluations in the store: `facts` and `probes` tables, the probe-call cache, schema 4.

Everything is real: the bundled sample trace, real replays and `ctxlab.evaluate`, a real DuckDB
file; Tier 2 runs with the deterministic `ContextModel` (answers from its own input)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import polars as pl
import pytest

import ctxlab
import ctxlab._store.store
from ctxlab._evaluate.evaluation import evaluate
from ctxlab._evaluate.survival import STATUSES
from ctxlab._replay.replay import replay
from ctxlab._store.store import SCHEMA_VERSION, Store, StoreError
from ctxlab.policies import get
from tests.context_model import ContextModel, RubricJudge
from tests.samples import long_trace

POLICY = {"window": 30000, "trigger": ("fraction", 0.5), "keep": ("messages", 4)}


@pytest.fixture(scope="module")
def trace() -> ctxlab.Trace:
    return long_trace()


@pytest.fixture(scope="module")
def evaluation(trace: ctxlab.Trace) -> ctxlab.Evaluation:
    result = evaluate(replay(trace, get("langchain-summarization", **POLICY)))
    assert result.facts.height and result.replay is not None
    return result


def test_save_evaluation_stores_the_replay_and_its_facts(
    tmp_path: Path, evaluation: ctxlab.Evaluation
) -> None:
    store = Store(tmp_path / "s.duckdb")
    key = store.save_evaluation(evaluation)
    assert store.replays()["replay_key"].to_list() == [key]
    assert key == Store(tmp_path / "t.duckdb").save(evaluation.replay, evaluation.replay.trace)
    facts = store.facts(key)
    assert facts["seq"].to_list() == list(range(evaluation.facts.height))
    assert facts.drop("replay_key", "seq").equals(evaluation.facts)
    assert set(facts["status"]) <= set(STATUSES)
    summary = store.replays().row(0, named=True)
    assert summary["needed_lost"] == evaluation.needed_lost
    assert store.probes(key).height == 0
    assert store.facts().height == evaluation.facts.height


def test_saving_again_replaces_facts_and_keeps_a_models_probes(
    tmp_path: Path, trace: ctxlab.Trace
) -> None:
    """Tier 1 is deterministic: saved twice, the facts are there once. A model-free rerun keeps
    the probes a model answered; a new model run replaces them."""
    result = replay(trace, get("langchain-summarization", **POLICY))
    with_model = evaluate(result, ContextModel(), RubricJudge())
    assert with_model.probes.height
    store = Store(tmp_path / "s.duckdb")
    key = store.save_evaluation(with_model)
    stored = store.probes(key)
    assert stored.height == with_model.probes.height
    columns = [c for c in with_model.probes.columns if c in stored.columns]
    assert stored.select(columns).equals(with_model.probes.select(columns))
    extra = [json.loads(e) for e in stored["extra"]]  # what failed, and the raw judge replies
    assert all(
        set(e) == {"error", "ceiling_note", "judge_reply", "ceiling_judge_reply"} for e in extra
    )
    assert [e["judge_reply"] for e in extra] == with_model.probes["judge_reply"].to_list()
    assert store.save_evaluation(evaluate(result), replay_key=key) == key
    assert store.facts(key).height == with_model.facts.height
    assert store.probes(key).height == with_model.probes.height
    assert store.save_evaluation(with_model) == key
    assert store.probes(key).height == with_model.probes.height


def test_probe_columns_the_table_does_not_name_go_to_extra(
    tmp_path: Path, evaluation: ctxlab.Evaluation
) -> None:
    probes = pl.DataFrame(
        {
            "turn": [3],
            "kind": ["recall"],
            "question": ["q"],
            "expected": ["e"],
            "answer": [None],
            "score": [0.0],
            "ceiling_score": [1.0],
            "latency_ms": [12],
        }
    )
    store = Store(tmp_path / "s.duckdb")
    key = store.save_evaluation(
        ctxlab.Evaluation(
            evaluation.trace_id,
            evaluation.policy,
            evaluation.params,
            evaluation.facts,
            evaluation.survival,
            probes,
            evaluation.replay,
        )
    )
    row = store.probes(key).row(0, named=True)
    assert (row["kind"], row["score"], row["ceiling_score"]) == ("recall", 0.0, 1.0)
    assert json.loads(row["extra"]) == {"latency_ms": 12}


def test_a_given_key_must_be_stored(tmp_path: Path, evaluation: ctxlab.Evaluation) -> None:
    store = Store(tmp_path / "s.duckdb")
    with pytest.raises(StoreError, match="no replay with key 'nope'"):
        store.save_evaluation(evaluation, replay_key="nope")
    assert store.query("SELECT count(*) n FROM facts")["n"][0] == 0
    key = store.save(evaluation.replay, evaluation.replay.trace)
    assert store.replays()["needed_lost"].to_list() == [None]  # stored, never evaluated
    assert store.save_evaluation(evaluation, replay_key=key) == key
    assert store.replays()["needed_lost"].to_list() == [evaluation.needed_lost]


def test_an_evaluation_without_its_replay_needs_a_key(
    tmp_path: Path, evaluation: ctxlab.Evaluation
) -> None:
    bare = ctxlab.Evaluation(
        evaluation.trace_id,
        evaluation.policy,
        evaluation.params,
        evaluation.facts,
        evaluation.survival,
        evaluation.probes,
    )
    with pytest.raises(StoreError, match="pass the stored replay's key"):
        Store(tmp_path / "s.duckdb").save_evaluation(bare)


def test_a_failed_save_leaves_nothing(
    tmp_path: Path, trace: ctxlab.Trace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay, its trace, facts and probes are one transaction: a failure while writing
    the probes (injected into the last insert) leaves the store as it was."""
    store = Store(tmp_path / "s.duckdb")
    result = evaluate(replay(trace, get("langchain-summarization", **POLICY)), ContextModel())
    real = ctxlab._store.store._insert

    def failing(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
        if table == "probes":
            raise RuntimeError("disk full")
        real(con, table, frame)

    monkeypatch.setattr(ctxlab._store.store, "_insert", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        store.save_evaluation(result)
    for table in ("traces", "replays", "turns", "facts", "probes"):
        assert store.query(f"SELECT count(*) n FROM {table}")["n"][0] == 0, table


def test_probe_cache_keeps_the_first_answer_across_stores_and_threads(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    cache = Store(path).probe_cache()
    assert cache.get("k") is None
    cache.put("k", "first", "model-a")
    cache.put("k", "second", "model-a")
    assert cache.get("k") == "first"
    again = Store(path).probe_cache()
    assert again.get("k") == "first"

    def put(i: int) -> None:
        again.put(f"key-{i}", f"answer-{i}", "model-b")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, range(40)))
    rows = Store(path, read_only=True).query(
        "SELECT count(*) n, count(DISTINCT answer) a FROM probe_cache WHERE model = 'model-b'"
    )
    assert rows.row(0) == (40, 40)
    assert Store(path, read_only=True).probe_cache().get("key-7") == "answer-7"
    quick = Store(path).probe_cache()
    for i in range(5):  # each committed before put returns: another reader sees it at once
        quick.put(f"quick-{i}", "x", "model-c")
        assert Store(path, read_only=True).probe_cache().get(f"quick-{i}") == "x"


def test_probe_answers_come_from_the_store_on_a_rerun(tmp_path: Path, trace: ctxlab.Trace) -> None:
    """A rerun through the store's cache asks the model nothing and gives the same frame."""
    result = replay(trace, get("langchain-summarization", **POLICY))
    store = Store(tmp_path / "s.duckdb")
    model = ContextModel()
    cache = store.probe_cache()
    first = evaluate(result, model, cache=cache)
    asked = store.query("SELECT count(*) n FROM probe_cache")["n"][0]
    assert asked > 0
    assert model.log
    fresh = ContextModel()
    second = evaluate(result, fresh, cache=Store(tmp_path / "s.duckdb").probe_cache())
    assert second.probes.equals(first.probes)
    assert fresh.log == []  # every answer came from the store
    assert store.query("SELECT count(*) n FROM probe_cache")["n"][0] == asked


def test_a_schema_3_store_gains_the_evaluation_tables(
    tmp_path: Path, evaluation: ctxlab.Evaluation
) -> None:
    path = tmp_path / "old.duckdb"
    key = Store(path).save(evaluation.replay, evaluation.replay.trace)
    with duckdb.connect(str(path)) as con:  # what a store of schema 3 holds
        for table in ("facts", "probes", "probe_cache"):
            con.execute(f"DROP TABLE {table}")
        con.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="migrate it to schema 6"):
        Store(path, read_only=True)
    store = Store(path)
    assert store.query("SELECT value FROM meta WHERE key = 'schema_version'").item() == "6"
    assert SCHEMA_VERSION == 6
    assert store.replays()["replay_key"].to_list() == [key]
    assert store.save_evaluation(evaluation) == key
    assert store.facts(key).height == evaluation.facts.height
