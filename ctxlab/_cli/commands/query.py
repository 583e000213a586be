"""`ctxlab query --db FILE "SQL" [--format table|csv|json] [--wide] [--timeout S]
[--memory-limit SIZE]`: read the store with SQL.

The table fits the terminal (`ctxlab._cli.tables`); CSV and JSON carry every value in full. A
query is stopped after `--timeout` seconds (default 60) and at `--memory-limit` (default
2GB), each with one line saying which limit it met."""

from __future__ import annotations

import argparse
import json
from collections.abc import Collection
from typing import TYPE_CHECKING

from ctxlab._cli import flags
from ctxlab._cli.tables import add_wide_flag, table
from ctxlab._store.defaults import DEFAULT_PATH

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
    parser.add_argument(
        "--db", default=str(DEFAULT_PATH), metavar="FILE", help="store file (default: %(default)s)"
    )
    parser.add_argument(
        "--timeout",
        type=flags.seconds,
        default=flags.QUERY_TIMEOUT,
        metavar="SECONDS",
        help="stop a query running longer (0: no limit; default: %(default)g)",
    )
    parser.add_argument(
        "--memory-limit",
        type=flags.memory_size,
        default=flags.QUERY_MEMORY,
        metavar="SIZE",
        help="DuckDB's memory limit for the query, e.g. 512MB or 8GB (default: %(default)s)",
    )
    add_format_flags(parser)
    parser.set_defaults(run=run)


def add_format_flags(parser: argparse.ArgumentParser) -> None:
    """`--format` and `--wide`, read by `render` (`query`, `sweep`)."""
    parser.add_argument(
        "--format",
        choices=("table", "csv", "json"),
        default="table",
        help="table: fitted to the terminal, numbers grouped and rounded; csv: a header line, "
        "then one line per row; json: a list of objects; csv and json hold every value in "
        "full (default: %(default)s)",
    )
    add_wide_flag(parser)


def render(frame: pl.DataFrame, fmt: str, wide: bool = False, whole: Collection[str] = ()) -> str:
    """A query result as a table, CSV (header line, then rows) or a JSON list of objects;
    the table's columns named in `whole` are never cut (`ctxlab._cli.tables.table`)."""
    if fmt == "csv":
        return frame.write_csv().rstrip("\n")
    if fmt == "json":
        return json.dumps(frame.to_dicts(), default=str, indent=1)
    return table(frame.columns, frame.rows(), wide=wide, whole=whole)


def run(args: argparse.Namespace) -> int:
    from ctxlab._store.store import Store

    store = Store(args.db, read_only=True)
    frame = store.query(args.sql, timeout=args.timeout, memory_limit=args.memory_limit)
    print(render(frame, args.format, args.wide))
    return 0
