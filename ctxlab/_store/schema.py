"""The store's tables, each defined once: column names with their polars and DuckDB types.

Everything else is derived from these definitions: the `CREATE TABLE` statements
(`ctxlab._store.store`), the frames a replay builds (`ctxlab._replay.replay.Replay.turns` and
`.events`), the
frames the store inserts, and the Parquet files sweep workers hand to the writer. A column
added here appears everywhere at once; a store file written before it is migrated by
`ctxlab._store.store.MIGRATIONS`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import polars as pl

_SQL_TYPES: dict[pl.DataType, str] = {
    pl.Utf8(): "VARCHAR",
    pl.Int64(): "BIGINT",
    pl.Boolean(): "BOOLEAN",
    pl.Float64(): "DOUBLE",
    pl.Datetime("us"): "TIMESTAMP",
    pl.List(pl.Int64()): "BIGINT[]",
}


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its name, its polars type, and its DuckDB type when that is not the one
    the polars type maps to (`JSON` text is `Utf8` in frames)."""

    name: str
    dtype: pl.DataType
    sql_type: str | None = None

    @property
    def sql(self) -> str:
        """The DuckDB type of the column."""
        return self.sql_type or _SQL_TYPES[self.dtype]


@dataclass(frozen=True, slots=True)
class Table:
    """A store table: its name, its columns in order and its primary key, if any."""

    name: str
    columns: tuple[Column, ...]
    key: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """Column names in order."""
        return tuple(c.name for c in self.columns)

    def polars(self, drop: Iterable[str] = ()) -> dict[str, pl.DataType]:
        """The polars schema of the table's rows, without the columns in `drop` (a replay's
        own frames have no `replay_key` or `seq`: the store adds them)."""
        skip = set(drop)
        return {c.name: c.dtype for c in self.columns if c.name not in skip}

    def create(self) -> str:
        """The `CREATE TABLE IF NOT EXISTS` statement."""
        cols = ", ".join(
            f"{c.name} {c.sql}{' PRIMARY KEY' if c.name == self.key else ''}" for c in self.columns
        )
        return f"CREATE TABLE IF NOT EXISTS {self.name} ({cols});"

    def frame(self, data: dict[str, Any], drop: Iterable[str] = ()) -> pl.DataFrame:
        """Rows given column by column (lists or arrays), typed by this table (columns in
        `drop` left out)."""
        return pl.DataFrame(data, schema=self.polars(drop))


def _cols(spec: str, dtype: pl.DataType, sql: str | None = None) -> tuple[Column, ...]:
    return tuple(Column(name, dtype, sql) for name in spec.split())


_S, _I, _B, _T, _F = pl.Utf8(), pl.Int64(), pl.Boolean(), pl.Datetime("us"), pl.Float64()

META = Table("meta", (*_cols("key value", _S),), key="key")

TRACES = Table(
    "traces",
    (
        *_cols("trace_key trace_id format source model provider", _S),
        *_cols("messages turns recorded_input_tokens", _I),
        *_cols("parent_trace_key parent_tool_call_id system_prompt", _S),
        *_cols("tools metadata", _S, "JSON"),
        Column("loaded_at", _T),
        *_cols("notes compactions", _S, "JSON"),
    ),
    key="trace_key",
)
"""One row per trace (subagents too), keyed by its content hash
(`ctxlab._store.store.trace_key`)."""

MESSAGES = Table(
    "messages",
    (
        Column("trace_key", _S),
        Column("position", _I),
        *_cols("type message_id name tool_call_id", _S),
        Column("chars", _I),
        Column("text", _S),
        Column("message", _S, "JSON"),
    ),
)

RECORDED_TURNS = Table(
    "recorded_turns",
    (
        Column("trace_key", _S),
        *_cols("turn position", _I),
        *_cols("model run_id", _S),
        *_cols("input_tokens output_tokens cache_read_tokens cache_write_tokens", _I),
        Column("compacted", _B),
    ),
)

REPLAYS = Table(
    "replays",
    (
        *_cols("replay_key trace_key trace_id policy", _S),
        Column("params", _S, "JSON"),
        *_cols("summarizer ctxlab_version", _S),
        Column("created_at", _T),
        Column("billing_method", _S),
    ),
    key="replay_key",
)
"""One row per replay, keyed by the hash of trace, policy, parameters, summariser and version;
`billing_method` says how its `turns.billed_tokens` are known
(`ctxlab._cost.calibration.METHODS`)."""

TURNS = Table(
    "turns",
    (
        Column("replay_key", _S),
        *_cols(
            "turn position context_tokens system_tokens tools_tokens human_tokens ai_tokens "
            "tool_results_tokens stubs_tokens summary_tokens messages recorded_input_tokens "
            "baseline_tokens events billed_tokens",
            _I,
        ),
        *_cols("late_trigger would_overflow", _B),
    ),
)
"""`ctxlab._replay.replay.Replay.turns` plus its replay: the `<kind>_tokens` columns are
`ctxlab._messages.KINDS`; `billed_tokens` what the provider would bill for the request
(`ctxlab._cost.calibration`), `late_trigger` / `would_overflow` the turns where the policy's own
count
stayed under its trigger / the window but the billed count did not (null when unknown)."""

EVENTS = Table(
    "events",
    (
        Column("replay_key", _S),
        Column("seq", _I),
        Column("kind", _S),
        Column("turn", _I),
        Column("messages", pl.List(_I)),
        *_cols("tokens_before tokens_after", _I),
        *_cols("file_path reason summary", _S),
    ),
)
"""`ctxlab._replay.replay.Replay.events` plus its replay and order (`seq`); the other columns are
the
fields of `ctxlab._replay.policies.base.Event`, `summary` the text a `summarize` event wrote."""

FILES = Table(
    "files",
    (Column("replay_key", _S), Column("path", _S), Column("bytes", _I), Column("sha256", _S)),
)
"""A replay's virtual files; contents live once each in `blobs`."""

BLOBS = Table("blobs", (Column("sha256", _S), Column("content", _S)))

SUMMARIES = Table(
    "summaries",
    (*_cols("cache_key model prompt_sha input_sha text", _S), Column("created_at", _T)),
    key="cache_key",
)
"""The LLM summariser's cache (`ctxlab.summarizers.LLM`): request hash -> summary."""

FACTS = Table(
    "facts",
    (
        Column("replay_key", _S),
        Column("seq", _I),
        *_cols("fact category", _S),
        *_cols("message first_turn evicted_turn needed_turn", _I),
        *_cols("status status_when_needed", _S),
    ),
)
"""`ctxlab._evaluate.survival.follow` of a replay (Tier 1 of `ctxlab.evaluate`) plus its replay and
the
facts' order (`seq`, as `ctxlab._evaluate.facts.extract` listed them)."""

PROBES = Table(
    "probes",
    (
        Column("replay_key", _S),
        Column("seq", _I),
        Column("turn", _I),
        *_cols("kind question expected answer", _S),
        *_cols("score ceiling_score", _F),
        *_cols("ceiling_answer fact category judged_by", _S),
        Column("extra", _S, "JSON"),
    ),
)
"""`Evaluation.probes` (Tier 2) plus its replay and order: `ctxlab._evaluate.probes.PROBE_COLUMNS`
and
`EXTRA_COLUMNS`; `extra` holds any other column of the frame as one JSON object per row."""

CALIBRATIONS = Table(
    "calibrations",
    (
        *_cols("calibration_key model_family trace_id model method", _S),
        Column("calls_with_usage", _I),
        *_cols("policy_counter_error_median billed_error_median", _F),
        *_cols("scale per_message offset_tokens", _F),
        Column("encoding", _S),
        Column("deltas", _I),
        Column("held_out_error_median", _F),
        Column("created_at", _T),
    ),
    key="calibration_key",
)
"""`ctxlab._cost.calibration.TraceCalibration` rows (`Store.save_calibration`), one per trace and
model, kept so traces of the same model family without usage can borrow the fit
(`ctxlab._cost.calibration.biller_for(trace, store)`); the fit's fields are flattened
(`offset_tokens` is `Fit.offset`)."""

PROBE_CACHE = Table(
    "probe_cache",
    (*_cols("cache_key model answer", _S), Column("created_at", _T)),
    key="cache_key",
)
"""Answers of probe calls (`ctxlab._evaluate.probes.ProbeCache`): call hash -> answer, so reruns
are free."""

TUNE_STUDIES = Table(
    "tune_studies",
    (
        *_cols("study policy sampler", _S),
        *_cols("space objectives settings splits", _S, "JSON"),
        Column("seed", _I),
        Column("holdout", _F),
        Column("ctxlab_version", _S),
        Column("created_at", _T),
    ),
    key="study",
)
"""One row per `ctxlab.tune` study (its state): the policy, the space and objectives as given,
the sampler and seed, the settings fixed beside the space (`settings`: base parameters,
budget, batch), and which traces are tuned on and which held out (`splits`: trace key ->
`tune` or `holdout`). A rerun of the same study reads them back and refuses a changed one."""

TUNE_TRIALS = Table(
    "tune_trials",
    (
        *_cols("trial_key study", _S),
        Column("number", _I),
        *_cols("kind label state", _S),
        *_cols("params tune holdout", _S, "JSON"),
        Column("feasible", _B),
        Column("updated_at", _T),
    ),
    key="trial_key",
)
"""A study's trials (`kind` `trial`, numbered from 0 as Optuna numbers them) and reference
points (`kind` `reference`, negative numbers, `label` `defaults` or `recorded`); `state` is
Optuna's (`RUNNING` until every trace of the tuning set has its result, then `COMPLETE`);
`tune` / `holdout` the objectives' means over each set (JSON objects, null until known);
`trial_key` is `study/number`, so a trial is never stored twice."""

TUNE_PARAMS = Table(
    "tune_params",
    (
        *_cols("param_key study", _S),
        Column("number", _I),
        *_cols("name value", _S),
        Column("raw", _S, "JSON"),
    ),
    key="param_key",
)
"""One row per trial and tuned parameter: `value` as `--set` spells it, `raw` what the sampler
drew (read back on resume to check the sampler draws the same)."""

TUNE_RESULTS = Table(
    "tune_results",
    (
        *_cols("result_key study", _S),
        Column("number", _I),
        *_cols("split trace_key trace_id", _S),
        Column("cost", _F),
        *_cols("needed_lost peak cumulative late_triggers overflows", _I),
        Column("lost_by_category", _S, "JSON"),
        Column("seconds", _F),
    ),
    key="result_key",
)
"""One row per trial (or reference point), set and trace: what ctxlab measured of that replay
(`ctxlab._tune.objectives`), and the seconds its replay and evaluation took (for
bench/bench_tune.py; never part of a result)."""

TUNE_TABLES = (TUNE_STUDIES, TUNE_TRIALS, TUNE_PARAMS, TUNE_RESULTS)
"""The tables of `ctxlab.tune` (schema 6)."""

TABLES = (
    META,
    TRACES,
    MESSAGES,
    RECORDED_TURNS,
    REPLAYS,
    TURNS,
    EVENTS,
    FILES,
    BLOBS,
    SUMMARIES,
    FACTS,
    PROBES,
    PROBE_CACHE,
    CALIBRATIONS,
    *TUNE_TABLES,
)

FILE_ROWS = {**FILES.polars(drop=("replay_key",)), "content": pl.Utf8()}
"""A replay's files as a replay hands them over: the `files` columns with their content."""

PARTS = {"turns": TURNS, "events": EVENTS, "files": FILES, "facts": FACTS}
"""Tables whose rows a sweep worker writes as Parquet for the writer to read (the `replays`
row travels inline)."""


def int_max(column: pl.Series) -> int:
    """The largest value of an Int64 column (token counts of a replay's frames, survival
    totals), 0 when it has none (no rows, or every value missing, as `baseline_tokens` may
    be). polars types `Series.max()` for every dtype at once (dates, strings, ...); an Int64
    column's is an int or None."""
    top = column.max()
    assert top is None or isinstance(top, int), f"{column.name} is {column.dtype}, not Int64"
    return top or 0


FACT_ROWS = FACTS.polars(drop=("replay_key",))
"""A replay's facts as `ctxlab._store.store.SavedReplay` carries them: the `facts` columns but its
key."""


class SummaryRow(NamedTuple):
    """A `summaries` row as a summariser hands it to the store (which stamps `created_at`)."""

    cache_key: str
    model: str
    prompt_sha: str
    input_sha: str
    text: str
