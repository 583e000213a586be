"""`ctxlab.Store`: traces, replays and the summariser cache in one DuckDB file.

Why these choices:

* **Short connections.** DuckDB lets one process write a file and refuses other processes while
  it is open. A notebook that kept the file open would lock the CLI out for hours, so the store
  opens the file per operation and closes it at once. A second writer waits briefly
  (`timeout`) and then gets `StoreBusyError` naming the file and the holder.
* **Content keys.** A trace is keyed by a hash of its content, a replay by the hash of
  (trace, policy, parameters, summariser, ctxlab version): adding the same thing twice changes
  nothing, and a sweep can skip cells already stored (resume).
* **Bulk, transactional writes.** Every save is Arrow frames inserted inside one transaction:
  a crash or Ctrl-C leaves the previous state, never half a replay.
* **Polars out.** Every read returns a `polars.DataFrame`.

The schema is versioned in the `meta` table; older files are migrated on open, newer ones are
refused with a message saying to upgrade. The tables are defined in `ctxlab._store.schema`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl
from langchain_core.load import dumpd
from langchain_core.messages import AIMessage, BaseMessage

import ctxlab
from ctxlab._errors import QueryRefusedError, StoreBusyError, StoreError
from ctxlab._store.defaults import DEFAULT_PATH
from ctxlab._store.safety import check_blocks, check_statements, first_line, run_limited
from ctxlab._store.safety import sandbox as safety_sandbox
from ctxlab._store.schema import (
    CALIBRATIONS,
    EVENTS,
    FACT_ROWS,
    FACTS,
    FILE_ROWS,
    MESSAGES,
    PARTS,
    PROBE_CACHE,
    PROBES,
    RECORDED_TURNS,
    REPLAYS,
    SUMMARIES,
    TABLES,
    TRACES,
    TUNE_TABLES,
    TURNS,
    SummaryRow,
)
from ctxlab._trace import Trace

if TYPE_CHECKING:
    from ctxlab._cost.calibration import TraceCalibration
    from ctxlab._evaluate.evaluation import Evaluation
    from ctxlab._replay.replay import Replay

FILE_MODES = ("all", "offloaded", "none")
HISTORY_PREFIX = "/conversation_history/"
SCHEMA_VERSION = 6

VIEWS = """
CREATE OR REPLACE VIEW replay_summary AS
SELECT r.replay_key, r.trace_id, r.policy, r.params, r.summarizer,
       max(t.context_tokens) AS peak_context_tokens,
       sum(t.context_tokens)::BIGINT AS cumulative_input_tokens,
       avg(t.context_tokens) AS mean_context_tokens,
       max(t.baseline_tokens) AS peak_baseline_tokens,
       sum(t.baseline_tokens)::BIGINT AS cumulative_baseline_tokens,
       count(*) AS turns,
       (SELECT count(*) FROM events e WHERE e.replay_key = r.replay_key) AS events,
       n.needed_lost
FROM replays r JOIN turns t USING (replay_key)
LEFT JOIN (SELECT replay_key, count(*) FILTER (status_when_needed = 'lost') AS needed_lost
           FROM facts GROUP BY replay_key) n USING (replay_key)
GROUP BY ALL;
CREATE OR REPLACE VIEW events_by_kind AS
SELECT replay_key, kind, count(*) AS events,
       sum(tokens_before - tokens_after)::BIGINT AS tokens_removed
FROM events GROUP BY ALL;
CREATE OR REPLACE VIEW trace_policy AS
SELECT trace_id, policy, count(*) AS replays,
       min(peak_context_tokens) AS best_peak_context_tokens,
       min(cumulative_input_tokens) AS best_cumulative_input_tokens,
       avg(events) AS mean_events,
       min(needed_lost) AS best_needed_lost
FROM replay_summary GROUP BY ALL;
"""

SCHEMA = "\n".join(t.create() for t in TABLES) + VIEWS
"""Every table (`ctxlab._store.schema`) and the views over them; safe to run on an existing file."""

SCHEMA_SHA256 = hashlib.sha256(SCHEMA.encode()).hexdigest()
"""Stamped in `meta` when `SCHEMA` runs: a file stamped with it (and this ctxlab's version) has
every table and view as this ctxlab defines them, so opening it runs no DDL."""

MIGRATIONS: dict[int, str] = {
    1: "ALTER TABLE events ADD COLUMN summary VARCHAR;",
    2: "ALTER TABLE traces ADD COLUMN notes JSON; ALTER TABLE traces ADD COLUMN compactions JSON;",
    3: "\n".join(t.create() for t in (FACTS, PROBES, PROBE_CACHE)),
    4: "ALTER TABLE turns ADD COLUMN IF NOT EXISTS billed_tokens BIGINT; "
    "ALTER TABLE turns ADD COLUMN IF NOT EXISTS late_trigger BOOLEAN; "
    "ALTER TABLE turns ADD COLUMN IF NOT EXISTS would_overflow BOOLEAN; "
    "ALTER TABLE replays ADD COLUMN IF NOT EXISTS billing_method VARCHAR; " + CALIBRATIONS.create(),
    5: "\n".join(t.create() for t in TUNE_TABLES),
}
"""Each entry upgrades a file from schema N to N + 1 (run in order, in one transaction)."""

TURN_COLUMNS = TURNS.names[1:]
"""The columns of `Replay.turns` (the `turns` table without its `replay_key`)."""


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _message_json(msg: BaseMessage) -> str:
    return _canonical(dumpd(msg))


def trace_key(trace: Trace) -> str:
    """Content hash of a trace: same conversation, same key, whatever file it came from.

    Messages are hashed through pydantic's own JSON (`model_dump_json`, five times faster than
    `dumpd`): a sweep hashes every trace before its first cell runs.
    """
    h = hashlib.sha256()
    head = [trace.trace_id, trace.model, trace.provider, trace.tools, trace.parent_tool_call_id]
    h.update(_canonical(head).encode())
    for msg in trace.messages:
        h.update(msg.model_dump_json().encode("utf-8", "surrogatepass"))
    for t in trace.turns:
        h.update(_canonical([t.position, t.input_tokens, t.output_tokens, t.compacted]).encode())
    return h.hexdigest()[:32]


def replay_key(trace_hash: str, policy: str, params: dict[str, Any], summarizer: str) -> str:
    """Identity of a replay: a sweep cell with this key is already done."""
    return _sha(_canonical([trace_hash, policy, params, summarizer, ctxlab.__version__]))[:32]


@dataclass(frozen=True, slots=True)
class SavedReplay:
    """What the store needs of a replay, computed where the replay ran (possibly remote)."""

    replay_key: str
    trace_key: str
    trace_id: str
    policy: str
    params: str
    summarizer: str
    turns: pl.DataFrame
    events: pl.DataFrame
    files: pl.DataFrame
    summaries: tuple[SummaryRow, ...] = ()
    """Summariser cache entries written while replaying (stored with the replay)."""
    facts: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=FACT_ROWS))
    """Tier 1 of `ctxlab.evaluate` on the replay (`fact_rows`), when it was evaluated."""
    billing_method: str | None = None
    """How the replay's billed tokens are known (`Replay.billing_method`), if they are."""

    @classmethod
    def of(
        cls,
        replay: Replay,
        trace_hash: str,
        summarizer: str,
        *,
        files: str = "all",
        omit: Collection[str] = (),
        facts: pl.DataFrame | None = None,
    ) -> SavedReplay:
        """Package a replay. `files`: which contents to keep: "all", "offloaded" (results and
        messages the policy offloaded, not the summarised-history files, which re-render from
        the stored messages and can be megabytes per replay) or "none"; paths, sizes and
        hashes are always kept. `omit`: sha256 of contents the writer already has (a sweep
        worker sends each content once), left out so they do not travel again. `facts`: the
        replay's `Evaluation.facts`, to store with it."""
        if files not in FILE_MODES:
            raise ValueError(f"files must be one of {', '.join(FILE_MODES)}, got {files!r}")
        key = replay_key(trace_hash, replay.policy, replay.params, summarizer)
        events = replay.events.with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64))
        paths = sorted(replay.files)
        contents = [replay.files[p] for p in paths]
        raw = [c.encode("utf-8", "surrogatepass") for c in contents]
        hashes = [hashlib.sha256(b).hexdigest() for b in raw]
        keep = [
            h not in omit
            and (files == "all" or (files == "offloaded" and not p.startswith(HISTORY_PREFIX)))
            for p, h in zip(paths, hashes, strict=True)
        ]
        file_frame = pl.DataFrame(
            {
                "path": paths,
                "bytes": [len(b) for b in raw],
                "sha256": hashes,
                "content": [c if k else None for c, k in zip(contents, keep, strict=True)],
            },
            schema=FILE_ROWS,
        )
        return cls(
            replay_key=key,
            trace_key=trace_hash,
            trace_id=replay.trace_id,
            policy=replay.policy,
            params=_canonical(replay.params),
            summarizer=summarizer,
            turns=replay.turns.select(TURN_COLUMNS),
            events=events.select(EVENTS.names[1:]),
            files=file_frame,
            facts=fact_rows(facts) if facts is not None else pl.DataFrame(schema=FACT_ROWS),
            billing_method=getattr(replay, "billing_method", None),
        )

    def write_parts(self, prefix: Path) -> ReplayPart:
        """Write the frames as Parquet files `<prefix>.<table>.parquet` for `Store.save_parts`.

        A sweep worker calls this so that the single writer process reads finished rows
        inside DuckDB instead of unpickling and concatenating frames in Python, work that on
        a small machine takes a core away from the workers. Uncompressed: the files live
        for seconds on a local disk."""
        for table in PARTS:
            frame = getattr(self, table).with_columns(pl.lit(self.replay_key).alias("replay_key"))
            frame.write_parquet(f"{prefix}.{table}.parquet", compression="uncompressed")
        return ReplayPart(
            self.replay_key,
            self.trace_key,
            self.trace_id,
            self.policy,
            self.params,
            self.summarizer,
            str(prefix),
            self.summaries,
            self.billing_method,
        )


@dataclass(frozen=True, slots=True)
class ReplayPart:
    """A replay a sweep worker wrote to Parquet files (`SavedReplay.write_parts`): its
    identity inline, its rows in `<prefix>.<table>.parquet` (the `files` part with contents)."""

    replay_key: str
    trace_key: str
    trace_id: str
    policy: str
    params: str
    summarizer: str
    prefix: str
    summaries: tuple[SummaryRow, ...] = ()
    billing_method: str | None = None

    def path(self, table: str) -> str:
        """The Parquet file holding this replay's rows of `table`."""
        return f"{self.prefix}.{table}.parquet"

    def remove(self) -> None:
        """Delete the files (once stored, or when abandoned)."""
        for table in PARTS:
            Path(self.path(table)).unlink(missing_ok=True)


def summarizer_name(summarizer: Any) -> str:
    """A stable name for a summariser, for replay identity (its own `name` when it has one)."""
    if summarizer is None:
        return "default"
    name = getattr(summarizer, "name", None)
    return str(name) if name else type(summarizer).__name__


class Store:
    """A DuckDB file of traces, replays and summaries (default `data/ctxlab.duckdb`)."""

    def __init__(
        self, path: str | Path = DEFAULT_PATH, *, read_only: bool = False, timeout: float = 10.0
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.timeout = timeout
        try:
            str(self.path).encode("utf-8")
        except UnicodeEncodeError:
            raise StoreError(
                f"{ascii(str(self.path))}: the store's path is not valid UTF-8 (DuckDB opens "
                "only UTF-8 paths); use another path"
            ) from None
        if read_only and not self.path.exists():
            raise StoreError(f"{self.path}: no such store file")
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a directory, not a store file")
        current = False
        if self.path.exists() and (read_only or self.path.stat().st_size):
            # Checked through a read-only connection first: a damaged or foreign file is
            # refused before anything could write to it.
            with self._connect(write=False) as con:
                check_blocks(con, self.path)
                current = self._check_version(con) == SCHEMA_VERSION and self._stamped(con)
        if not read_only and not current:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect(write=True) as con:
                self._ensure_schema(con)

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r}{', read_only=True' if self.read_only else ''})"

    # ------------------------------------------------------------------ connections

    @contextlib.contextmanager
    def _connect(
        self, *, write: bool, sandbox: bool = False, memory_limit: str | None = None
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one operation; `sandbox`: the settings user SQL runs under
        (`ctxlab._store.safety.SANDBOX`). A damaged block met on the way is a `StoreError`."""
        if write and self.read_only:
            raise StoreError(f"{self.path} was opened read-only; open Store(path) to write")
        config = safety_sandbox(memory_limit) if sandbox else {}
        deadline = time.monotonic() + self.timeout
        delay = 0.02
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=not write, config=config)
                break
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower():
                    raise StoreError(
                        f"{self.path}: not a usable DuckDB store file ({first_line(exc)}); it "
                        "was left as it is: use another store file"
                    ) from exc
                if time.monotonic() >= deadline:
                    raise StoreBusyError(
                        f"{self.path} is in use by another process and stayed locked for "
                        f"{self.timeout:g} s ({_holder(exc)}); DuckDB allows one writer at a "
                        "time: retry when it finishes, or pass a longer timeout"
                    ) from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
            except duckdb.Error as exc:
                raise StoreError(
                    f"{self.path}: not a DuckDB store file ({first_line(exc)})"
                ) from exc
        try:
            yield con
        except duckdb.IOException as exc:
            raise StoreError(f"{self.path}: the store file is damaged ({first_line(exc)})") from exc
        finally:
            con.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._connect(write=True) as con:
            con.begin()
            try:
                yield con
            except BaseException:
                con.rollback()
                raise
            con.commit()

    def _check_version(self, con: duckdb.DuckDBPyConnection) -> int | None:
        tables = {
            r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
        if not tables:
            return None
        if "meta" not in tables:
            raise StoreError(
                f"{self.path} is a DuckDB file but not a ctxlab store (no meta table); "
                "use another path"
            )
        row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer ctxlab (schema {version}, this ctxlab "
                f"reads up to {SCHEMA_VERSION}); upgrade ctxlab to open it"
            )
        if version < SCHEMA_VERSION and self.read_only:
            raise StoreError(
                f"{self.path} has schema {version}; open it once with Store(path) (not "
                f"read-only) to migrate it to schema {SCHEMA_VERSION}"
            )
        return version

    def _stamped(self, con: duckdb.DuckDBPyConnection) -> bool:
        """Whether this ctxlab's `SCHEMA` was the last run on the file (`meta`'s stamp): then
        opening it to write needs no schema statements, and no second connection, which
        costs more than most of what a command then does with the store."""
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        return meta.get("schema_sha256") == SCHEMA_SHA256 and (
            meta.get("ctxlab_version") == ctxlab.__version__
        )

    def _ensure_schema(self, con: duckdb.DuckDBPyConnection) -> None:
        version = self._check_version(con)
        con.begin()
        if version is not None:
            for step in range(version, SCHEMA_VERSION):
                con.execute(MIGRATIONS[step])
        con.execute(SCHEMA)
        con.execute(
            "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?), ('ctxlab_version', ?), "
            "('schema_sha256', ?)",
            [str(SCHEMA_VERSION), ctxlab.__version__, SCHEMA_SHA256],
        )
        con.commit()

    # ------------------------------------------------------------------ writes

    def add(
        self, traces: Trace | Iterable[Trace], *, keys: Sequence[str] | None = None
    ) -> list[str]:
        """Store traces (and their subagents); returns their keys. Known traces are skipped.

        `keys`: their `trace_key`s when the caller already computed them (sweeps do)."""
        items = [traces] if isinstance(traces, Trace) else list(traces)
        given = list(keys) if keys is not None else [None] * len(items)
        rows: list[tuple[Trace, str, str | None]] = []
        keys = [self._flatten(t, None, rows, k) for t, k in zip(items, given, strict=True)]
        with self._transaction() as con:
            self._add_rows(con, rows)
        return keys

    def _add_rows(
        self, con: duckdb.DuckDBPyConnection, rows: list[tuple[Trace, str, str | None]]
    ) -> None:
        """Insert the traces of `rows` (trace, key, parent key) not yet stored."""
        known = {
            r[0]
            for r in con.execute(
                "SELECT trace_key FROM traces WHERE trace_key IN (SELECT unnest(?))",
                [[k for _, k, _ in rows]],
            ).fetchall()
        }
        fresh = [(t, k, p) for t, k, p in rows if k not in known]
        fresh = list({k: (t, k, p) for t, k, p in fresh}.values())
        if fresh:
            _insert(con, "traces", _traces_frame(fresh))
            _insert(con, "messages", _messages_frame(fresh))
            _insert(con, "recorded_turns", _recorded_frame(fresh))

    def _flatten(self, trace: Trace, parent: str | None, out: list, key: str | None = None) -> str:
        key = key or trace_key(trace)
        out.append((trace, key, parent))
        for sub in trace.subagents:
            self._flatten(sub, key, out)
        return key

    def save(
        self, replay: Replay, trace: Trace, *, summarizer: Any = None, files: str = "all"
    ) -> str:
        """Store one replay of `trace` (the trace too, if new); returns the replay key.

        `summarizer` defaults to the one the replay used; `files` as in `SavedReplay.of`."""
        self.add(trace)
        used = summarizer if summarizer is not None else getattr(replay, "summarizer", None)
        saved = SavedReplay.of(replay, trace_key(trace), summarizer_name(used), files=files)
        self.save_many([saved])
        return saved.replay_key

    def save_many(self, saved: Sequence[SavedReplay]) -> int:
        """Store computed replays in one transaction; those already stored are skipped."""
        if not saved:
            return 0
        with self._transaction() as con:
            return self._save_many(con, saved)

    def _save_many(self, con: duckdb.DuckDBPyConnection, saved: Sequence[SavedReplay]) -> int:
        _insert_summaries(con, [r for s in saved for r in s.summaries])
        known = self._known(con, [s.replay_key for s in saved])
        fresh = list({s.replay_key: s for s in saved if s.replay_key not in known}.values())
        if not fresh:
            return 0
        _insert(con, "replays", _replays_frame(fresh))
        for table in PARTS:
            frames = [
                getattr(s, table).with_columns(pl.lit(s.replay_key).alias("replay_key"))
                for s in fresh
                if getattr(s, table).height
            ]
            if frames:
                rows = pl.concat(frames, how="vertical_relaxed")
                if table == "files":
                    _insert_blobs(con, rows)
                    rows = rows.drop("content")
                _insert(con, table, rows)
        return len(fresh)

    def save_evaluation(self, evaluation: Evaluation, replay_key: str | None = None) -> str:
        """Store an evaluation's facts and probes under its replay; returns the replay key.

        Without `replay_key` the key is computed from `evaluation.replay` as `save` does, and
        the replay (and its trace) is stored too if it is not yet. All in one transaction. The
        replay's facts are replaced (Tier 1 is deterministic); its probes are replaced only by
        an evaluation that has probes, so a model-free rerun keeps the scores a model gave."""
        rows: list[tuple[Trace, str, str | None]] = []
        saved = None
        if replay_key is None:
            replay = evaluation.replay
            if replay is None or replay.trace is None:
                raise StoreError(
                    "this evaluation holds no replay with its trace; pass the stored replay's "
                    "key: store.save_evaluation(evaluation, replay_key=store.save(replay, trace))"
                )
            tkey = self._flatten(replay.trace, None, rows)
            saved = SavedReplay.of(replay, tkey, summarizer_name(replay.summarizer))
            replay_key = saved.replay_key
        facts = fact_rows(evaluation.facts).with_columns(pl.lit(replay_key).alias("replay_key"))
        probes = probe_rows(evaluation.probes).with_columns(pl.lit(replay_key).alias("replay_key"))
        with self._transaction() as con:
            if saved is not None:
                self._add_rows(con, rows)
                self._save_many(con, [saved])
            elif not self._known(con, [replay_key]):
                raise StoreError(
                    f"{self.path}: no replay with key {replay_key!r}; store the replay first "
                    "(Store.save) or pass no key"
                )
            con.execute("DELETE FROM facts WHERE replay_key = ?", [replay_key])
            if facts.height:
                _insert(con, "facts", facts)
            if probes.height:
                con.execute("DELETE FROM probes WHERE replay_key = ?", [replay_key])
                _insert(con, "probes", probes)
        return replay_key

    def save_parts(self, parts: Sequence[ReplayPart]) -> int:
        """Store replays that workers wrote as Parquet files, in one transaction; those
        already stored are skipped. DuckDB reads the files itself (`read_parquet`), so the
        writing process spends no Python time per row."""
        if not parts:
            return 0
        with self._transaction() as con:
            _insert_summaries(con, [r for p in parts for r in p.summaries])
            # Contents from every part, stored or not: a worker sends each content once, and
            # the cell that carried it may be one another process stored meanwhile.
            con.execute(
                "INSERT INTO blobs SELECT sha256, any_value(content) FROM read_parquet(?) n "
                "WHERE content IS NOT NULL "
                "AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.sha256 = n.sha256) "
                "GROUP BY sha256",
                [[p.path("files") for p in parts]],
            )
            known = self._known(con, [p.replay_key for p in parts])
            fresh = list({p.replay_key: p for p in parts if p.replay_key not in known}.values())
            if not fresh:
                return 0
            _insert(con, "replays", _replays_frame(fresh))
            for table, schema in PARTS.items():
                names = ", ".join(f'"{c}"' for c in schema.names)
                con.execute(
                    f"INSERT INTO {table} ({names}) SELECT {names} FROM read_parquet(?)",
                    [[p.path(table) for p in fresh]],
                )
        return len(fresh)

    def _known(self, con: duckdb.DuckDBPyConnection, keys: list[str]) -> set[str]:
        rows = con.execute(
            "SELECT replay_key FROM replays WHERE replay_key IN (SELECT unnest(?))", [keys]
        ).fetchall()
        return {r[0] for r in rows}

    def has_replays(self, keys: Iterable[str]) -> set[str]:
        """Which of these replay keys are already stored (for resuming sweeps)."""
        with self._connect(write=False) as con:
            return self._known(con, list(keys))

    # ------------------------------------------------------------------ summariser cache

    def summaries(self, model: str | None = None) -> dict[str, str]:
        """The summariser cache, `cache_key -> text`: every entry, or those of one `model`
        identity (what `ctxlab.summarizers.LLM` loads before a sweep ships it to workers)."""
        where, params = ("WHERE model = ?", [model]) if model is not None else ("", [])
        with self._connect(write=False) as con:
            rows = con.execute(f"SELECT cache_key, text FROM summaries {where}", params)
            return dict(rows.fetchall())

    def get_summary(self, cache_key: str) -> str | None:
        """One cached summary, or None."""
        with self._connect(write=False) as con:
            row = con.execute(
                "SELECT text FROM summaries WHERE cache_key = ?", [cache_key]
            ).fetchone()
        return row[0] if row else None

    def put_summaries(self, rows: Iterable[SummaryRow]) -> None:
        """Add cache entries in one transaction; a key already stored keeps its first text
        (entries are keyed by what was asked, so concurrent writers agree or the first wins)."""
        rows = list(rows)
        if rows:
            with self._transaction() as con:
                _insert_summaries(con, rows)

    # ------------------------------------------------------------------ reads

    def query(
        self,
        sql: str,
        params: Sequence[Any] | None = None,
        *,
        timeout: float | None = None,
        memory_limit: str | None = None,
    ) -> pl.DataFrame:
        """Read-only SQL over the store's tables and views, as a polars frame.

        Runs in a sandbox (`ctxlab._store.safety`): statements that would write, attach,
        copy, export or load extensions raise `QueryRefusedError`, and no file but the store
        can be read; an error in the SQL is a `StoreError` naming the file. `timeout`
        (seconds) and `memory_limit` (a DuckDB size, `"2GB"`) bound the query: past either it
        stops with a `StoreError` saying which."""
        check_statements(sql, self.path)
        with self._connect(write=False, sandbox=True, memory_limit=memory_limit) as con:
            try:
                return pl.DataFrame(run_limited(con, sql, list(params or []), timeout))
            except duckdb.InterruptException as exc:
                raise StoreError(
                    f"{self.path}: query stopped after {timeout:g} s (its time limit; "
                    "ctxlab query --timeout sets it)"
                ) from exc
            except duckdb.OutOfMemoryException as exc:
                limit = memory_limit or "DuckDB's default"
                raise StoreError(
                    f"{self.path}: query stopped at its memory limit ({limit}; ctxlab query "
                    f"--memory-limit sets it): {first_line(exc)}"
                ) from exc
            except duckdb.IOException:
                raise  # a damaged block: `_connect` says so
            except (duckdb.PermissionException, duckdb.InvalidInputException) as exc:
                raise QueryRefusedError(f"{self.path}: {first_line(exc)}") from exc
            except duckdb.Error as exc:
                raise StoreError(f"{self.path}: {first_line(exc)}") from exc

    def traces(self) -> pl.DataFrame:
        return self.query("SELECT * FROM traces ORDER BY loaded_at, trace_id")

    # ------------------------------------------------------------------ calibrations

    def save_calibration(self, calibrations: TraceCalibration | Iterable[TraceCalibration]) -> int:
        """Keep calibrations (`ctxlab.cost.calibrate_trace`) so traces of the same model family
        without usage can borrow them; one row per trace and model, a later save of
        the same pair replacing the earlier. Returns how many rows were written."""
        from ctxlab._cost.calibration import TraceCalibration, model_family

        items = [calibrations] if isinstance(calibrations, TraceCalibration) else [*calibrations]
        rows = {f"{c.trace_id}|{c.model}": c for c in items}
        if not rows:
            return 0
        now = _now()
        frame = CALIBRATIONS.frame(
            {
                "calibration_key": list(rows),
                "model_family": [c.fit.family or model_family(c.model) for c in rows.values()],
                "trace_id": [c.trace_id for c in rows.values()],
                "model": [c.model for c in rows.values()],
                "method": [c.method for c in rows.values()],
                "calls_with_usage": [c.calls_with_usage for c in rows.values()],
                "policy_counter_error_median": [
                    c.policy_counter_error_median for c in rows.values()
                ],
                "billed_error_median": [c.billed_error_median for c in rows.values()],
                "scale": [c.fit.scale for c in rows.values()],
                "per_message": [c.fit.per_message for c in rows.values()],
                "offset_tokens": [c.fit.offset for c in rows.values()],
                "encoding": [c.fit.encoding for c in rows.values()],
                "deltas": [c.fit.deltas for c in rows.values()],
                "held_out_error_median": [c.fit.held_out_error_median for c in rows.values()],
                "created_at": [now] * len(rows),
            }
        )
        with self._transaction() as con:
            con.execute(
                "DELETE FROM calibrations WHERE calibration_key IN (SELECT unnest(?))",
                [list(rows)],
            )
            _insert(con, "calibrations", frame)
        return len(rows)

    def calibrations(self) -> pl.DataFrame:
        """Every stored calibration, by model family, then most calls with usage first."""
        return self.query(
            "SELECT * FROM calibrations ORDER BY model_family, calls_with_usage DESC, created_at"
        )

    def calibration(self, model_family: str) -> TraceCalibration | None:
        """The calibration a trace of `model_family` without usage borrows: the fitted one
        (method `calibrated`) with the most calls with usage (latest on ties); None without."""
        from ctxlab._cost.calibration import Fit, TraceCalibration

        rows = self.query(
            "SELECT * FROM calibrations WHERE model_family = ? AND method = 'calibrated' "
            "ORDER BY calls_with_usage DESC, created_at DESC LIMIT 1",
            [model_family],
        )
        if rows.height == 0:
            return None
        row = rows.row(0, named=True)
        fit = Fit(
            row["model_family"],
            row["scale"],
            row["per_message"],
            row["offset_tokens"],
            row["encoding"],
            row["deltas"],
            row["held_out_error_median"],
        )
        return TraceCalibration(
            row["trace_id"],
            row["model"],
            row["method"],
            row["calls_with_usage"],
            row["policy_counter_error_median"],
            row["billed_error_median"],
            fit,
        )

    def replays(self) -> pl.DataFrame:
        return self.query("SELECT * FROM replay_summary ORDER BY trace_id, policy, params")

    def turns(self, replay_key: str | None = None) -> pl.DataFrame:
        return self._for("turns", replay_key, "turn")

    def events(self, replay_key: str | None = None) -> pl.DataFrame:
        return self._for("events", replay_key, "seq")

    def files(self, replay_key: str | None = None) -> pl.DataFrame:
        """Files with their content (null where the replay was saved without it)."""
        where, params = ("WHERE f.replay_key = ?", [replay_key]) if replay_key else ("", [])
        return self.query(
            "SELECT f.*, b.content FROM files f LEFT JOIN blobs b USING (sha256) "
            f"{where} ORDER BY f.replay_key, f.path",
            params,
        )

    def facts(self, replay_key: str | None = None) -> pl.DataFrame:
        """Stored Tier 1 facts (`ctxlab._evaluate.survival.follow` columns), of one replay or
        all."""
        return self._for("facts", replay_key, "seq")

    def probes(self, replay_key: str | None = None) -> pl.DataFrame:
        """Stored Tier 2 probes, of one replay or all (columns the table does not name are
        in `extra`, as JSON)."""
        return self._for("probes", replay_key, "seq")

    def probe_cache(self) -> StoreProbeCache:
        """The probe-call cache in this store (`ctxlab._evaluate.probes.ProbeCache`, see
        `StoreProbeCache`): a rerun asks no call twice."""
        return StoreProbeCache(self)

    def messages(self, trace_key: str) -> pl.DataFrame:
        return self.query(
            "SELECT * FROM messages WHERE trace_key = ? ORDER BY position", [trace_key]
        )

    def _for(self, table: str, replay_key: str | None, order: str) -> pl.DataFrame:
        if replay_key is None:
            return self.query(f"SELECT * FROM {table} ORDER BY replay_key, {order}")
        return self.query(
            f"SELECT * FROM {table} WHERE replay_key = ? ORDER BY {order}", [replay_key]
        )


class StoreProbeCache:
    """`ctxlab._evaluate.probes.ProbeCache` backed by a store's `probe_cache` table.

    Opening the DuckDB file costs tens of milliseconds, so the table is read once (at the first
    `get` or `put`). Each answer is written as it arrives, in a transaction of its own that is
    committed before `put` returns: an evaluation killed at any moment (`kill -9`) leaves every
    answer it was given in the file, and a rerun asks only the calls not answered. (Answers
    used to be written a batch a second, and a kill lost up to a second of them.) Safe to share
    between the threads that run probes concurrently. Answers other processes store after the
    first read are not seen (a rerun sees them)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._answers: dict[str, str] | None = None
        self._lock = threading.Lock()

    def _read(self) -> dict[str, str]:
        if self._answers is None:
            with self.store._connect(write=False) as con:
                rows = con.execute("SELECT cache_key, answer FROM probe_cache").fetchall()
            self._answers = dict(rows)
        return self._answers

    def get(self, key: str) -> str | None:
        """The cached answer of the call with this key, or None."""
        with self._lock:
            return self._read().get(key)

    def put(self, key: str, answer: str, model: str) -> None:
        """Keep an answer, committed to the store before returning; a key already cached keeps
        its first answer."""
        with self._lock:
            answers = self._read()
            if key in answers:
                return
            with self.store._transaction() as con:
                con.execute(
                    "INSERT INTO probe_cache VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    [key, model, answer, _now()],
                )
            answers[key] = answer


PROBE_COLUMNS = PROBES.names[2:-1]
"""The probe columns the `probes` table has a column for (any others go to `extra`)."""


def fact_rows(facts: pl.DataFrame) -> pl.DataFrame:
    """An `Evaluation.facts` frame as `facts` rows (without the replay key), in its order."""
    return facts.with_row_index("seq").select(
        pl.col(name).cast(dtype) for name, dtype in FACT_ROWS.items()
    )


def probe_rows(probes: pl.DataFrame) -> pl.DataFrame:
    """An `Evaluation.probes` frame as `probes` rows (without the replay key): the known
    columns typed, any others as one JSON object per row in `extra`."""
    schema = PROBES.polars(drop=("replay_key",))
    others = [c for c in probes.columns if c not in PROBE_COLUMNS]
    extra = (
        [_canonical(row) for row in probes.select(others).iter_rows(named=True)]
        if others
        else [None] * probes.height
    )
    frame = probes.with_row_index("seq").with_columns(pl.Series("extra", extra, pl.Utf8))
    missing = [pl.lit(None).alias(c) for c in schema if c not in frame.columns]
    return frame.with_columns(missing).select(
        pl.col(name).cast(dtype) for name, dtype in schema.items()
    )


def _holder(exc: Exception) -> str:
    text = str(exc)
    marker = "PID "
    if marker in text:
        pid = text.split(marker, 1)[1].split(")", 1)[0]
        return f"held by process {pid}"
    return "held by another process"


def _replays_frame(items: Sequence[SavedReplay | ReplayPart]) -> pl.DataFrame:
    """The `replays` rows of a batch, stamped with this ctxlab's version and the time now."""
    now = _now()
    return REPLAYS.frame(
        {
            "replay_key": [s.replay_key for s in items],
            "trace_key": [s.trace_key for s in items],
            "trace_id": [s.trace_id for s in items],
            "policy": [s.policy for s in items],
            "params": [s.params for s in items],
            "summarizer": [s.summarizer for s in items],
            "ctxlab_version": [ctxlab.__version__] * len(items),
            "created_at": [now] * len(items),
            "billing_method": [s.billing_method for s in items],
        }
    )


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    """Bulk insert through Arrow, matching columns by name."""
    arrow = frame.to_arrow()
    con.register("_ctxlab_rows", arrow)
    try:
        cols = ", ".join(f'"{c}"' for c in frame.columns)
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _ctxlab_rows")
    finally:
        con.unregister("_ctxlab_rows")


def _insert_blobs(con: duckdb.DuckDBPyConnection, files: pl.DataFrame) -> None:
    """Store each distinct file content once: every replay of a trace offloads the same results."""
    new = files.filter(pl.col("content").is_not_null()).unique("sha256").select("sha256", "content")
    if new.height == 0:
        return
    con.register("_ctxlab_blobs", new.to_arrow())
    try:
        con.execute(
            "INSERT INTO blobs SELECT * FROM _ctxlab_blobs n "
            "WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.sha256 = n.sha256)"
        )
    finally:
        con.unregister("_ctxlab_blobs")


def _insert_summaries(con: duckdb.DuckDBPyConnection, rows: Sequence[SummaryRow]) -> None:
    """Insert summariser cache entries, skipping keys already stored (first writer wins)."""
    if not rows:
        return
    unique = list({r.cache_key: r for r in rows}.values())
    frame = pl.DataFrame(unique, schema=SUMMARIES.polars(drop=("created_at",)), orient="row")
    con.register("_ctxlab_summaries", frame.with_columns(created_at=pl.lit(_now())).to_arrow())
    try:
        names = ", ".join(SUMMARIES.names)
        con.execute(
            f"INSERT INTO summaries ({names}) SELECT {names} FROM _ctxlab_summaries "
            "ON CONFLICT DO NOTHING"
        )
    finally:
        con.unregister("_ctxlab_summaries")


def _traces_frame(rows: list[tuple[Trace, str, str | None]]) -> pl.DataFrame:
    now = _now()
    return TRACES.frame(
        {
            "trace_key": [k for _, k, _ in rows],
            "trace_id": [t.trace_id for t, _, _ in rows],
            "format": [t.format for t, _, _ in rows],
            "source": [t.source for t, _, _ in rows],
            "model": [t.model for t, _, _ in rows],
            "provider": [t.provider for t, _, _ in rows],
            "messages": [len(t.messages) for t, _, _ in rows],
            "turns": [len(t.turns) for t, _, _ in rows],
            "recorded_input_tokens": [t.recorded_input_tokens for t, _, _ in rows],
            "parent_trace_key": [p for _, _, p in rows],
            "parent_tool_call_id": [t.parent_tool_call_id for t, _, _ in rows],
            "system_prompt": [t.system_prompt for t, _, _ in rows],
            "tools": [_canonical(t.tools) for t, _, _ in rows],
            "metadata": [_canonical(t.metadata) for t, _, _ in rows],
            "loaded_at": [now] * len(rows),
            "notes": [_canonical(t.notes) for t, _, _ in rows],
            "compactions": [_canonical([asdict(c) for c in t.compactions]) for t, _, _ in rows],
        }
    )


def _messages_frame(rows: list[tuple[Trace, str, str | None]]) -> pl.DataFrame:
    cols: dict[str, list[Any]] = {k: [] for k in MESSAGES.names}
    for trace, key, _ in rows:
        for pos, msg in enumerate(trace.messages):
            text = msg.text
            cols["trace_key"].append(key)
            cols["position"].append(pos)
            cols["type"].append(msg.type)
            cols["message_id"].append(msg.id)
            cols["name"].append(msg.name)
            cols["tool_call_id"].append(getattr(msg, "tool_call_id", None))
            cols["chars"].append(len(text) + _call_chars(msg))
            cols["text"].append(text)
            cols["message"].append(_message_json(msg))
    return MESSAGES.frame(cols)


def _call_chars(msg: BaseMessage) -> int:
    if isinstance(msg, AIMessage) and msg.tool_calls:
        return len(_canonical([c["args"] for c in msg.tool_calls]))
    return 0


def _recorded_frame(rows: list[tuple[Trace, str, str | None]]) -> pl.DataFrame:
    turns = [(key, t) for trace, key, _ in rows for t in trace.turns]
    return RECORDED_TURNS.frame(
        {
            "trace_key": [key for key, _ in turns],
            "turn": [t.index for _, t in turns],
            "position": [t.position for _, t in turns],
            "model": [t.model for _, t in turns],
            "run_id": [t.run_id for _, t in turns],
            "input_tokens": [t.input_tokens for _, t in turns],
            "output_tokens": [t.output_tokens for _, t in turns],
            "cache_read_tokens": [t.cache_read_tokens for _, t in turns],
            "cache_write_tokens": [t.cache_write_tokens for _, t in turns],
            "compacted": [t.compacted for _, t in turns],
        }
    )
