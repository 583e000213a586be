"""`ctxlab query --db FILE "SQL" [--format table|csv|json]`: read the store with SQL."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from ctxlab.defaults import DEFAULT_PATH
from ctxlab.output import table

if TYPE_CHECKING:
    import polars as pl


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "query",
        help="run read-only SQL over a store",
        description="Tables: traces, messages, recorded_turns, replays, turns, events, files, "
        "summaries; views: replay_summary, events_by_kind, trace_policy.",
    )
    parser.add_argument("sql", metavar="SQL")
    parser.add_argument("--db", default=str(DEFAULT_PATH), help="store file (default: %(default)s)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.set_defaults(run=run)


def render(frame: pl.DataFrame, fmt: str) -> str:
    """A query result as a table, CSV (header line, then rows) or a JSON list of objects."""
    if fmt == "csv":
        return frame.write_csv().rstrip("\n")
    if fmt == "json":
        return json.dumps(frame.to_dicts(), default=str, indent=1)
    return table(frame.columns, frame.rows())


def run(args: argparse.Namespace) -> int:
    import duckdb

    from ctxlab.store import Store, StoreError

    try:
        frame = Store(args.db, read_only=True).query(args.sql)
    except (StoreError, duckdb.Error) as exc:
        print(f"ctxlab: error: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    print(render(frame, args.format))
    return 0
