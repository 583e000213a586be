"""`ctxlab inspect PATH... [--json]`: what each trace file holds, before any replay.

Prints `ctxlab.inspect` of the traces in every PATH (its rows are the JSON's `traces`), the
number of traces per format, and the files that failed or were skipped.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

from ctxlab._cli import flags
from ctxlab._cli.output import load_status, report_errors
from ctxlab._cli.tables import add_wide_flag, fit, plural, table
from ctxlab._errors import TraceFormatError

COLUMNS = (
    "trace_id",
    "format",
    "model",
    "messages",
    "turns",
    "subagents",
    "recorded_compactions",
    "recorded_input_tokens",
)

LEGEND = (
    "messages: messages in the trace (subagents' not included); turns: model calls; "
    "recorded_compactions: compactions the recording holds; recorded_input_tokens: input "
    "tokens the provider reported, summed over the calls."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="list the traces in files or directories",
        description="Per trace: id, detected format, model, messages, turns, subagents, "
        "recorded compaction points and recorded input tokens; the number of traces per format; "
        "then what each trace's format does not record (its notes).",
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="trace file, .gz file or directory"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print {"traces": [...], "formats": {...}, "errors": [...], "skipped": [...]} as '
        "JSON; each trace names its source file, each error its file",
    )
    add_wide_flag(parser)
    parser.set_defaults(run=run)


def _problem(error: TraceFormatError) -> dict[str, Any]:
    """A file that failed or was skipped, for `--json`: where (`source`, `line`, `run_id`)
    and what (`error`, the same one line stderr shows)."""
    return {
        "source": error.source,
        "line": error.line,
        "run_id": error.run_id,
        "error": str(error),
    }


def run(args: argparse.Namespace) -> int:
    from ctxlab._ingest.inspection import inspect
    from ctxlab._ingest.load import load_all

    result = load_all(args.paths)
    flags.require_traces(result, args.paths)
    summaries = inspect(result).to_dicts()
    formats = dict(sorted(Counter(s["format"] for s in summaries).items()))
    if args.json:
        out = {
            "traces": summaries,
            "formats": formats,
            "errors": [_problem(e) for e in result.errors],
            "skipped": [_problem(e) for e in result.skipped],
        }
        print(json.dumps(out, indent=2))
    elif summaries:
        rows = [[s[c] for c in COLUMNS] for s in summaries]
        print(table(COLUMNS, rows, wide=args.wide, legend=LEGEND))
        counts = ", ".join(f"{n} {name}" for name, n in formats.items())
        print(fit(f"{plural(len(summaries), 'trace')} by format: {counts}"))
        for s in summaries:
            for note in s["notes"]:
                print(fit(f"note: {s['trace_id']}: {note}", None if not args.wide else 10**6))
    report_errors(result.errors, result.skipped)
    return load_status(result)
