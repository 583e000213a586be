"""`ctxlab load PATH... --db FILE`: put traces into a store (idempotent)."""

from __future__ import annotations

import argparse

from ctxlab._cli import flags
from ctxlab._cli.output import load_status, report_errors
from ctxlab._cli.tables import fit, plural
from ctxlab._store.defaults import DEFAULT_PATH


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
    parser.add_argument(
        "--db", default=str(DEFAULT_PATH), metavar="FILE", help="store file (default: %(default)s)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ctxlab._ingest.load import load_all
    from ctxlab._store.store import Store

    result = load_all(args.paths)
    flags.require_traces(result, args.paths)
    flags.say_store_folder(args.db)
    store = Store(args.db)
    before = store.query("SELECT count(*) AS n FROM traces")["n"][0]
    store.add(result)
    after = store.query("SELECT count(*) AS n FROM traces")["n"][0]
    subagents = sum(len(t.walk()) - 1 for t in result)
    read = plural(len(result), "trace") + " read"
    if subagents:  # stored as traces of their own, so the counts below include them
        read += f" (and {plural(subagents, 'subagent conversation')})"
    stored = f"{after - before:,} new in {args.db}, {plural(after, 'trace')} stored in all"
    print(fit(f"{read}; {stored}", paths=True))
    report_errors(result.errors, result.skipped)
    return load_status(result)
