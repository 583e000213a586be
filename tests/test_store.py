"""The DuckDB store: idempotent, transactional, versioned, shared between processes."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import TypeVar

import duckdb
import polars as pl
import pytest

import ctxlab
from ctxlab._replay.replay import replay
from ctxlab._store.store import SCHEMA_VERSION, Store, StoreBusyError, StoreError, trace_key
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import Fixed
from tests.synthetic import make_trace

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trace() -> ctxlab.Trace:
    return make_trace(60, seed=3, model="claude-sonnet-4-5", provider="anthropic")


def test_adding_the_same_trace_twice_changes_nothing(tmp_path: Path, trace: ctxlab.Trace) -> None:
    store = Store(tmp_path / "s.duckdb")
    (key,) = store.add(trace)
    before = store.query(
        "SELECT (SELECT count(*) FROM traces) t, (SELECT count(*) FROM messages) m"
    )
    assert store.add([trace, trace]) == [key, key]
    after = store.query("SELECT (SELECT count(*) FROM traces) t, (SELECT count(*) FROM messages) m")
    assert before.equals(after) and after["m"][0] == len(trace.messages)
    msgs = store.messages(key)
    assert msgs["position"].to_list() == list(range(len(trace.messages)))
    assert msgs["type"][0] == "system"


def test_content_key_ignores_where_a_trace_came_from(trace: ctxlab.Trace) -> None:
    copy = dataclasses.replace(trace, source="elsewhere")
    assert trace_key(copy) == trace_key(trace)
    other = make_trace(60, seed=4, model="claude-sonnet-4-5", provider="anthropic")
    assert trace_key(other) != trace_key(trace)


def test_replay_round_trip_and_views(tmp_path: Path, trace: ctxlab.Trace) -> None:
    store = Store(tmp_path / "s.duckdb")
    result = replay(trace, DeepAgents(window=30_000), summarizer=Fixed("short summary"))
    key = store.save(result, trace, summarizer=Fixed("short summary"))
    assert store.save(result, trace, summarizer=Fixed("short summary")) == key  # idempotent
    assert store.query("SELECT count(*) n FROM replays")["n"][0] == 1
    turns = store.turns(key).drop("replay_key")
    assert turns.equals(result.turns.select(turns.columns))
    events = store.events(key)
    assert events["kind"].to_list() == result.events["kind"].to_list()
    files = store.files(key)
    for path, content in zip(files["path"], files["content"], strict=True):
        assert content.encode() == result.file_bytes(path)
    summary = store.replays().row(0, named=True)
    assert summary["peak_context_tokens"] == result.turns["context_tokens"].max()
    assert summary["cumulative_input_tokens"] == result.turns["context_tokens"].sum()
    assert summary["events"] == result.events.height


def test_failed_write_leaves_nothing(tmp_path: Path, trace: ctxlab.Trace) -> None:
    store = Store(tmp_path / "s.duckdb")
    with pytest.raises(RuntimeError, match="boom"):
        with store._transaction() as con:
            con.execute("INSERT INTO replays (replay_key) VALUES ('half')")
            raise RuntimeError("boom")
    assert store.query("SELECT count(*) n FROM replays")["n"][0] == 0


def test_schema_2_file_gains_notes_and_compactions(tmp_path: Path, trace: ctxlab.Trace) -> None:
    """A store written before traces carried notes and recorded compactions is migrated on open
    and keeps its rows."""
    path = tmp_path / "s.duckdb"
    Store(path).add(trace)
    with duckdb.connect(str(path)) as con:
        con.execute("ALTER TABLE traces DROP COLUMN notes")
        con.execute("ALTER TABLE traces DROP COLUMN compactions")
        con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    store = Store(path)
    rows = store.query("SELECT trace_id, notes, compactions FROM traces")
    assert rows["trace_id"].to_list() == [trace.trace_id]
    assert rows["notes"].to_list() == [None]
    store.add(
        ctxlab.Trace(
            trace_id="noted",
            format="messages",
            source="x",
            messages=[],
            turns=[],
            notes=["no system prompt recorded"],
            compactions=[ctxlab.RecordedCompaction(turn=3, trigger="manual")],
        )
    )
    row = store.query("SELECT notes, compactions FROM traces WHERE trace_id = 'noted'")
    assert json.loads(row["notes"][0]) == ["no system prompt recorded"]
    assert json.loads(row["compactions"][0])[0]["trigger"] == "manual"


def test_newer_or_foreign_files_are_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    Store(path)
    with duckdb.connect(str(path)) as con:
        con.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)]
        )
    with pytest.raises(StoreError, match="newer ctxlab.*upgrade ctxlab"):
        Store(path)
    foreign = tmp_path / "other.duckdb"
    with duckdb.connect(str(foreign)) as con:
        con.execute("CREATE TABLE x (a INT)")
    with pytest.raises(StoreError, match="not a ctxlab store"):
        Store(foreign)
    with pytest.raises(StoreError, match="no such store"):
        Store(tmp_path / "missing.duckdb", read_only=True)


HOLD = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
con.begin()
con.execute("INSERT INTO summaries (cache_key, text) VALUES ('held', 'x')")
print("holding", flush=True)
sys.stdin.readline()  # holds the write lock until the test says "release"
con.commit()
con.close()
"""


@contextlib.contextmanager
def _held(path: Path) -> Iterator[Callable[[], None]]:
    """Another process holding `path` open for writing, mid-transaction, until the test calls
    the yielded `release` (a line on its stdin): no clock decides when the lock goes."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "holding"

    def release() -> None:
        if not proc.stdin.closed:
            proc.stdin.write("release\n")
            proc.stdin.close()

    try:
        yield release
    finally:
        release()
        assert proc.wait(timeout=60) == 0


def _blocked_then(release: Callable[[], None], work: Callable[[], T]) -> T:
    """Run `work` on a thread; while the lock is held it must wait, not finish or fail (it is
    still running a second later); once `release` lets the lock go it completes."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        done = pool.submit(work)
        with contextlib.suppress(FutureTimeout):
            done.result(timeout=1.0)
        assert not done.done(), f"did not wait for the lock: {done.exception()!r}"
        release()
        return done.result(timeout=60)


def test_second_writer_gets_a_clear_message_or_waits(tmp_path: Path, trace: ctxlab.Trace) -> None:
    path = tmp_path / "s.duckdb"
    Store(path)
    with _held(path) as release:
        with pytest.raises(StoreBusyError, match=r"in use by another process.*one writer"):
            Store(path, timeout=0.3).add(trace)
        # waits for the other process, then writes
        _blocked_then(release, lambda: Store(path, timeout=60).add(trace))
    reader = Store(path, read_only=True)
    assert reader.query("SELECT count(*) n FROM summaries")["n"][0] == 1
    assert reader.traces().height == 1


def test_reads_while_another_process_writes(tmp_path: Path, trace: ctxlab.Trace) -> None:
    path = tmp_path / "s.duckdb"
    Store(path).add(trace)
    with _held(path) as release:
        frame = _blocked_then(release, lambda: Store(path, read_only=True, timeout=60).traces())
    assert frame.height == 1


def test_notebook_holding_a_store_does_not_lock_out_the_cli(
    tmp_path: Path, trace: ctxlab.Trace
) -> None:
    path = tmp_path / "s.duckdb"
    held = Store(path)  # as a notebook would keep it
    held.add(trace)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctxlab._cli.main",
            "query",
            "--db",
            str(path),
            "SELECT count(*) AS n FROM traces",
            "--format",
            "csv",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.splitlines() == ["n", "1"]
    other = make_trace(20, seed=9)
    subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            from ctxlab._store.store import Store
            from tests.synthetic import make_trace
            Store({str(path)!r}).add(make_trace(20, seed=9))
        """),
        ],
        check=True,
        cwd=REPO,
    )
    assert held.traces().height == 2 and trace_key(other) in held.traces()["trace_key"].to_list()
    assert isinstance(held.traces(), pl.DataFrame)


def test_file_contents_are_stored_once_and_history_files_optionally(
    tmp_path: Path, trace: ctxlab.Trace
) -> None:
    store = Store(tmp_path / "s.duckdb")
    a = replay(trace, DeepAgents(window=30_000, trigger=("fraction", 0.5)))
    b = replay(trace, DeepAgents(window=30_000, trigger=("fraction", 0.6)))
    key_b = store.save(b, trace, files="offloaded")
    files_b = store.files(key_b)
    history = [p for p in files_b["path"] if p.startswith("/conversation_history/")]
    assert history and set(files_b["path"]) == set(b.files)
    for row in files_b.iter_rows(named=True):
        if row["path"] in history:
            assert row["content"] is None and row["bytes"] == len(b.file_bytes(row["path"]))
        else:
            assert row["content"].encode() == b.file_bytes(row["path"])
    files_a = store.files(store.save(a, trace))  # files="all"
    assert all(c is not None for c in files_a["content"])
    shared = set(files_a["sha256"]) & set(files_b["sha256"])
    assert shared  # the same offloaded results in both replays...
    blobs = store.query("SELECT count(*) AS n, count(DISTINCT sha256) AS d FROM blobs").row(0)
    assert blobs[0] == blobs[1]  # ...are stored once
