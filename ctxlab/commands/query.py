"""`ctxlab query --db FILE "SQL" [--format table|csv|json]`: read the store with SQL."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ctxlab import flags
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
    parser.add_argument(
        "sql",
        metavar="SQL",
        type=flags.sql_text,
        help="read-only SQL (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN, PRAGMA); "
        "statements that write, attach, copy, export or load extensions are refused",
    )
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
    from ctxlab.store import Store

    print(render(Store(args.db, read_only=True).query(args.sql), args.format))
    return 0
