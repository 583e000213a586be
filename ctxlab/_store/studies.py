"""A tuning study's rows in the store: its state, trials, parameters and per-trace results.

`ctxlab.tune` is the one writer, as a sweep's parent is: each batch of rows goes in one
transaction, so a study killed at any moment leaves whole rows only, and every row has a
primary key built from the study, trial, set and trace (`study/number/...`), so a resumed
study can never store one twice (`ON CONFLICT DO NOTHING`). The tables are
`ctxlab._store.schema.TUNE_TABLES`; two studies compare in SQL (`ctxlab query`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb
import polars as pl

import ctxlab
from ctxlab._store.schema import TUNE_PARAMS, TUNE_RESULTS, TUNE_STUDIES, TUNE_TRIALS, Table
from ctxlab._store.store import Store


def _json(value: Any) -> str:
    """JSON as every tune row spells it: sorted keys, no spaces, exact floats."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class StudyRow:
    """A study's fixed settings (`tune_studies`): a rerun must give the same ones."""

    study: str
    policy: str
    sampler: str
    space: dict[str, str]
    objectives: list[str]
    settings: dict[str, Any]
    splits: dict[str, list[str]]
    seed: int
    holdout: float

    def differences(self, other: StudyRow) -> list[str]:
        """The settings in which `other` differs from this one, by name."""
        names = (
            "policy",
            "sampler",
            "space",
            "objectives",
            "settings",
            "splits",
            "seed",
            "holdout",
        )
        return [n for n in names if _json(getattr(self, n)) != _json(getattr(other, n))]


@dataclass(frozen=True, slots=True)
class TrialRow:
    """A trial or reference point to start: its number, kind, label, parameters as `--set`
    texts and as drawn (`raw`)."""

    number: int
    kind: str
    label: str | None
    params: dict[str, str]
    raw: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ResultRow:
    """One replay's measures (`tune_results`), in `ctxlab._tune.objectives.MEASURES` order."""

    number: int
    split: str
    trace_key: str
    trace_id: str
    values: tuple[Any, ...]
    lost_by_category: dict[str, int]
    seconds: float


def _insert(con: duckdb.DuckDBPyConnection, table: Table, rows: list[dict[str, Any]]) -> None:
    """Insert rows, skipping any whose key is stored (a resumed study writes nothing twice)."""
    if not rows:
        return
    frame = pl.DataFrame(rows, schema=table.polars(), orient="row")
    con.register("_ctxlab_tune", frame.to_arrow())
    try:
        names = ", ".join(table.names)
        con.execute(
            f"INSERT INTO {table.name} ({names}) SELECT {names} FROM _ctxlab_tune "
            "ON CONFLICT DO NOTHING"
        )
    finally:
        con.unregister("_ctxlab_tune")


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def read_study(store: Store, study: str) -> StudyRow | None:
    """The stored settings of `study`, None when the store has no such study."""
    rows = store.query("SELECT * FROM tune_studies WHERE study = ?", [study]).to_dicts()
    if not rows:
        return None
    row = rows[0]
    return StudyRow(
        study=row["study"],
        policy=row["policy"],
        sampler=row["sampler"],
        space=json.loads(row["space"]),
        objectives=json.loads(row["objectives"]),
        settings=json.loads(row["settings"]),
        splits=json.loads(row["splits"]),
        seed=row["seed"],
        holdout=row["holdout"],
    )


def create_study(store: Store, row: StudyRow) -> None:
    """Store a new study's settings."""
    with store._transaction() as con:
        _insert(
            con,
            TUNE_STUDIES,
            [
                {
                    "study": row.study,
                    "policy": row.policy,
                    "sampler": row.sampler,
                    "space": _json(row.space),
                    "objectives": _json(row.objectives),
                    "settings": _json(row.settings),
                    "splits": _json(row.splits),
                    "seed": row.seed,
                    "holdout": row.holdout,
                    "ctxlab_version": ctxlab.__version__,
                    "created_at": _now(),
                }
            ],
        )


def start_trials(store: Store, study: str, trials: Sequence[TrialRow]) -> None:
    """Store trials as `RUNNING`, with their parameters, in one transaction."""
    now = _now()
    trial_rows = [
        {
            "trial_key": f"{study}/{t.number}",
            "study": study,
            "number": t.number,
            "kind": t.kind,
            "label": t.label,
            "state": "RUNNING",
            "params": _json(t.params),
            "tune": None,
            "holdout": None,
            "feasible": None,
            "updated_at": now,
        }
        for t in trials
    ]
    param_rows = [
        {
            "param_key": f"{study}/{t.number}/{name}",
            "study": study,
            "number": t.number,
            "name": name,
            "value": text,
            "raw": _json(t.raw.get(name)),
        }
        for t in trials
        for name, text in t.params.items()
    ]
    with store._transaction() as con:
        _insert(con, TUNE_TRIALS, trial_rows)
        _insert(con, TUNE_PARAMS, param_rows)


def save_results(
    store: Store,
    study: str,
    results: Sequence[ResultRow],
    finished: Sequence[tuple[int, str, dict[str, float] | None, bool | None]],
) -> None:
    """Store per-trace results and, in the same transaction, the trials they finished: (number,
    column `tune` or `holdout`, the objectives' means, feasible or None to keep it)."""
    rows = [
        {
            "result_key": f"{study}/{r.number}/{r.split}/{r.trace_key}",
            "study": study,
            "number": r.number,
            "split": r.split,
            "trace_key": r.trace_key,
            "trace_id": r.trace_id,
            **dict(zip(TUNE_RESULTS.names[6:12], r.values, strict=True)),
            "lost_by_category": _json(r.lost_by_category),
            "seconds": r.seconds,
        }
        for r in results
    ]
    now = _now()
    with store._transaction() as con:
        _insert(con, TUNE_RESULTS, rows)
        for number, column, values, feasible in finished:
            state = "COMPLETE" if column == "tune" else None
            con.execute(
                f"UPDATE tune_trials SET {column} = ?, state = coalesce(?, state), "
                "feasible = coalesce(?, feasible), updated_at = ? WHERE trial_key = ?",
                [_json(values), state, feasible, now, f"{study}/{number}"],
            )


def read_trials(store: Store, study: str) -> list[dict[str, Any]]:
    """A study's trials and reference points, by number, each with `raw`: its parameters as
    the sampler drew them (name -> value)."""
    trials = store.query(
        "SELECT * FROM tune_trials WHERE study = ? ORDER BY number", [study]
    ).to_dicts()
    params = store.query(
        "SELECT number, name, raw FROM tune_params WHERE study = ? ORDER BY number, name", [study]
    ).to_dicts()
    raw: dict[int, dict[str, Any]] = {}
    for p in params:
        raw.setdefault(p["number"], {})[p["name"]] = json.loads(p["raw"])
    for t in trials:
        t["raw"] = raw.get(t["number"], {})
    return trials


def read_results(store: Store, study: str) -> pl.DataFrame:
    """A study's per-trace results."""
    return store.query(
        "SELECT * FROM tune_results WHERE study = ? ORDER BY number, split, trace_key", [study]
    )
