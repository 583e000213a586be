"""`ctxlab load PATH... --db FILE`: put traces into a store (idempotent)."""

from __future__ import annotations

import argparse

from ctxlab import flags
from ctxlab.defaults import DEFAULT_PATH
from ctxlab.output import report_errors


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "load",
        help="store traces in a DuckDB file",
        description="Load traces into the store. Traces already stored (same content) are "
        "left as they are; bad files are reported and nothing of them is written.",
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="trace file, .gz file or directory"
    )
    parser.add_argument("--db", default=str(DEFAULT_PATH), help="store file (default: %(default)s)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ctxlab.load import load_all
    from ctxlab.store import Store

    result = load_all(args.paths)
    flags.require_traces(result, args.paths)
    store = Store(args.db)
    before = store.query("SELECT count(*) AS n FROM traces")["n"][0]
    store.add(result)
    after = store.query("SELECT count(*) AS n FROM traces")["n"][0]
    print(
        f"{len(result)} traces read, {after - before} new rows in {args.db} ({after} traces stored)"
    )
    report_errors(result.errors)
    return 2 if result.errors else 0
