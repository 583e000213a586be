"""Schema 5: billed tokens and flags in `turns`, the billing method in `replays`, and the
`calibrations` table; a schema-4 file is migrated on open and keeps its rows."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import duckdb
import polars as pl
import pytest

import ctxlab
from ctxlab._cost import calibration as cal
from ctxlab._replay.replay import replay
from ctxlab._store.store import SCHEMA_VERSION, SavedReplay, Store, StoreError, trace_key
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import Fixed
from tests.synthetic import make_trace

V4_TURNS = (
    "replay_key turn position context_tokens system_tokens tools_tokens human_tokens ai_tokens "
    "tool_results_tokens stubs_tokens summary_tokens messages recorded_input_tokens "
    "baseline_tokens events"
).split()
V4_REPLAYS = "replay_key trace_key trace_id policy params summarizer ctxlab_version created_at"
NEW_TURNS = ["billed_tokens", "late_trigger", "would_overflow"]


@pytest.fixture(scope="module")
def trace() -> ctxlab.Trace:
    return make_trace(40, seed=5, model="claude-sonnet-4-5", provider="anthropic")


def _columns(path: Path, table: str) -> list[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]


def _make_v4(path: Path) -> None:
    """Turn a file this ctxlab wrote into what schema 4 held: no billing columns, no
    calibrations table, version 4 in `meta` (the shape the columns below are checked against)."""
    with duckdb.connect(str(path)) as con:
        for column in NEW_TURNS:
            con.execute(f"ALTER TABLE turns DROP COLUMN {column}")
        con.execute("ALTER TABLE replays DROP COLUMN billing_method")
        con.execute("DROP TABLE calibrations")
        con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")


def test_fresh_store_has_schema_5(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    store = Store(path)
    assert SCHEMA_VERSION == 6
    assert store.query("SELECT value FROM meta WHERE key = 'schema_version'").item() == "6"
    assert _columns(path, "turns") == [*V4_TURNS, *NEW_TURNS]
    assert _columns(path, "replays") == [*V4_REPLAYS.split(), "billing_method"]
    assert store.calibrations().height == 0


def test_schema_4_file_is_migrated_and_keeps_its_rows(tmp_path: Path, trace: ctxlab.Trace) -> None:
    path = tmp_path / "old.duckdb"
    result = replay(trace, DeepAgents(window=20_000), summarizer=Fixed("s"))
    key = Store(path).save(result, trace, summarizer=Fixed("s"))
    _make_v4(path)
    assert _columns(path, "turns") == V4_TURNS
    assert _columns(path, "replays") == V4_REPLAYS.split()
    with pytest.raises(StoreError, match="migrate it to schema 6"):
        Store(path, read_only=True)
    store = Store(path)
    assert store.query("SELECT value FROM meta WHERE key = 'schema_version'").item() == "6"
    turns = store.turns(key)
    assert turns.height == len(trace.turns)
    assert turns["context_tokens"].to_list() == result.turns["context_tokens"].to_list()
    for column in NEW_TURNS:
        assert turns[column].null_count() == turns.height
    assert store.query("SELECT billing_method FROM replays").item() is None
    # The migrated file takes new rows of every kind.
    other = replay(trace, DeepAgents(window=30_000), summarizer=Fixed("s"))
    assert store.save(other, trace, summarizer=Fixed("s")) != key
    assert store.save_calibration(cal.calibrate_trace(trace)) == 1
    assert Store(path, read_only=True).calibrations().height == 1


def test_billing_columns_round_trip(tmp_path: Path, trace: ctxlab.Trace) -> None:
    store = Store(tmp_path / "s.duckdb")
    result = replay(trace, DeepAgents(window=20_000), summarizer=Fixed("s"))
    # The billed columns as `ctxlab._cost.billing` fills them (tests/test_billing.py checks values).
    assert result.turns.schema["billed_tokens"] == pl.Int64
    assert result.turns.schema["late_trigger"] == pl.Boolean
    saved = SavedReplay.of(result, trace_key(trace), "Fixed")
    billed = [c * 2 for c in result.turns["context_tokens"]]
    late = [i % 2 == 0 for i in range(result.turns.height)]
    turns = saved.turns.with_columns(
        pl.Series("billed_tokens", billed, pl.Int64),
        pl.Series("late_trigger", late),
        pl.Series("would_overflow", [False] * len(late)),
    )
    store.add(trace)
    store.save_many([dataclasses.replace(saved, turns=turns, billing_method="calibrated")])
    stored = store.turns(saved.replay_key)
    assert stored["billed_tokens"].to_list() == billed
    assert stored["late_trigger"].to_list() == late
    row = store.query("SELECT billing_method FROM replays WHERE replay_key = ?", [saved.replay_key])
    assert row.item() == "calibrated"


def _calibration(trace_id: str, calls: int, scale: float, method: str = "calibrated"):
    fit = cal.Fit("claude-sonnet-4-5", scale, 20.0, 11_000.0, "o200k_base", calls - 1, 1.5)
    return cal.TraceCalibration(
        trace_id, "claude-sonnet-4-5-20250929", method, calls, 60.0, 1.0, fit
    )


def test_calibrations_round_trip_and_borrowing(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    assert store.calibration("claude-sonnet-4-5") is None
    assert store.save_calibration([_calibration("a", 10, 1.1), _calibration("b", 40, 1.2)]) == 2
    store.save_calibration(_calibration("a", 12, 1.15))  # same trace and model: replaced
    frame = store.calibrations()
    assert frame["trace_id"].to_list() == ["b", "a"]
    assert frame["scale"].to_list() == [1.2, 1.15]
    best = store.calibration("claude-sonnet-4-5")
    assert best == _calibration("b", 40, 1.2)
    # A Claude trace without usage borrows the scale and per-message constant, not the offset
    # (the system prompt another harness sent is not this trace's).
    messages = make_trace(10, seed=1, model="claude-sonnet-4-5", provider="anthropic").messages
    bare = ctxlab.from_messages(messages, model="claude-sonnet-4-5", provider="anthropic")
    assert all(t.input_tokens is None for t in bare.turns)
    biller = cal.biller_for(bare, store)
    assert (biller.method, biller.fit.scale, biller.fit.per_message, biller.fit.offset) == (
        "calibrated",
        1.2,
        20.0,
        0.0,
    )
    assert cal.calibrate_trace(bare, store).method == "calibrated"
    assert cal.biller_for(bare).method == "estimated"
    assert cal.biller_for(bare, Store(tmp_path / "empty.duckdb")).method == "estimated"
